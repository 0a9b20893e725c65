"""Batch invariance: each sequence of a batch against the same prompt run alone.

A point with ``batch_size`` > 1 is timed on batches, but the gate runs one sequence at a time, so an
engine that mixes sequences in a batch (a wrong stride, a shared KV slot, a mask across rows) passes it.
Here ``batch_size`` distinct prompts of different lengths (the point's prompt length down to about half
of it: ``lengths``) run as one batch, padded as the engine pads a batch (``Adapter.prefill_batch``: the
last real position's logits per sequence), and each alone (``prefill``). Each sequence's KL(alone ||
batch) over the full vocabulary is judged against a floor, and its top-1 must be the same unless the
prompt alone is a near tie (``TIE_MARGIN``).

The floor is the larger of the point's KL floor (``Correctness.noise_floor``: what the reference's own
rounding moves a position, bf16 against fp32) and the batch's own rounding without padding (each prompt
in an unpadded batch of copies of itself: 0 for tiny-llama in bf16, up to 0.006 for Gemma 3 270M in
bf16, whose batched kernels round unlike single-sequence ones). A sequence fails above ``LIMIT_FACTOR``
times the floor. The limit is relative, not an absolute KL, and every shorter row is about half padding
whatever the length, so one row's padding left unmasked fails at a long prompt as at a short one
(tiny-llama bf16: KL 0.31 at 6 tokens and 0.27 at 30, against 1.2e-4 clean). A point whose gate has no
floor (no KL tier) keeps the absolute ``KL_LIMIT``.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.correctness.logprobs import log_softmax
from harness.records.text_path import BatchInvariance

LIMIT_FACTOR = 10.0  # a row's KL over the floor; measured clean (tiny-llama bf16, left padding): 0.03x
KL_LIMIT = 1e-2  # the limit where the gate has no floor
TIE_MARGIN = 0.05  # nats between the alone top-1 and the batch's: a top-1 change inside it is rounding


def lengths(prompt_len: int, batch_size: int) -> list[int]:
    """Each sequence's length: the point's prompt length for the first, down to about half of it for the
    last, so every row but the first is padded (at least 2 tokens each)."""
    longest = max(prompt_len, 2)
    return [max(2, longest - (longest * index) // (2 * max(batch_size - 1, 1))) for index in range(batch_size)]


def skip_reason(adapter, batch_size: int) -> str | None:
    if batch_size <= 1:
        return "batch_size 1: nothing batched"
    if not adapter.supports_batch_logits:
        return f"{adapter.name} exposes no batched logits (prefill_batch), so a batch's sequences cannot be compared"
    if not adapter.supports_logits:
        return f"{adapter.name} exposes no step-wise logits to run each prompt alone"
    return None


def _kl(alone: np.ndarray, other: np.ndarray) -> float:
    return max(float(np.sum(np.exp(alone.astype(np.float64)) * (alone - other))), 0.0)


def check(adapter, prompts: Sequence[Sequence[int]], floor: Optional[float] = None) -> BatchInvariance:
    """``prompts``: one per sequence of the batch, of any lengths (``lengths``); ``floor``: the point's KL
    floor (``Correctness.noise_floor``), None where the gate has none."""
    why = skip_reason(adapter, len(prompts))
    if why:
        return BatchInvariance(skipped=why, batch_size=len(prompts))
    batched = np.asarray(adapter.prefill_batch(prompts), dtype=np.float32)
    alone = [log_softmax(adapter.prefill(prompt)) for prompt in prompts]
    own = max(  # the batch's own rounding without padding: each prompt in a batch of copies of itself
        _kl(alone[i], log_softmax(row))
        for i, prompt in enumerate(prompts)
        for row in np.asarray(adapter.prefill_batch([prompt] * len(prompts)), dtype=np.float32)
    )
    base = max(floor, own) if floor else None
    limit = LIMIT_FACTOR * base if base else max(KL_LIMIT, LIMIT_FACTOR * own)
    kls, agree, failing = [], 0, []
    for index, mine in enumerate(alone):
        together = log_softmax(batched[index])
        kl = _kl(mine, together)
        first, theirs = int(np.argmax(mine)), int(np.argmax(together))
        kls.append(kl)
        agree += first == theirs
        if kl > limit or mine[first] - mine[theirs] > TIE_MARGIN:
            failing.append(index)
    return BatchInvariance(
        verdict="fail" if failing else "pass",
        batch_size=len(prompts),
        lengths=[len(p) for p in prompts],
        padding=adapter.batch_padding,
        kl_max=max(kls),
        kl_limit=limit,
        kls=kls,
        noise_floor=floor or None,
        batch_floor=own,
        kl_ratio_max=max(kls) / base if base else None,
        limit_factor=LIMIT_FACTOR if base else None,
        top1_agreement=agree / len(prompts),
        failing_sequences=failing,
    )
