"""Batch invariance: each sequence of a batch against the same prompt run alone.

A point with ``batch_size`` > 1 is timed on batches, but the gate runs one sequence at a time, so an
engine that mixes sequences in a batch (a wrong stride, a shared KV slot, a mask across rows) passes it.
Here ``batch_size`` distinct prompts of different lengths (the point's prompt length down to half of it:
``lengths``) run as one batch, padded as the engine pads a batch (``Adapter.prefill_batch``: the last
real position's logits per sequence), and each alone (``prefill``); each sequence's KL(alone || batch)
over the full vocabulary is judged against the point's KL floor (``Correctness.noise_floor``: what the
reference's own rounding moves a position, bf16 against fp32), and its top-1 must be the same unless the
prompt alone is a near tie (``TIE_MARGIN``). A sequence fails above ``LIMIT_FACTOR`` times that floor: a
batch should move a sequence no further than rounding does. The limit is relative, not an absolute KL,
so one row's padding left unmasked, whose KL shrinks as the prompt grows (0.038 at 6 tokens, 0.0039 at
29 on Gemma 3 270M), fails at any length. A point whose gate has no floor (no KL tier) falls back to
the absolute ``KL_LIMIT``.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.correctness.logprobs import log_softmax
from harness.records.text_path import BatchInvariance

LIMIT_FACTOR = 1.0  # a row's KL over the point's floor; measured clean (tiny-llama bf16, left padding): 0.3x
KL_LIMIT = 1e-2  # absolute, where the gate has no floor
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
    limit = LIMIT_FACTOR * floor if floor else KL_LIMIT
    batched = np.asarray(adapter.prefill_batch(prompts), dtype=np.float32)
    kls, agree, failing = [], 0, []
    for index, prompt in enumerate(prompts):
        alone, together = log_softmax(adapter.prefill(prompt)), log_softmax(batched[index])
        kl = max(float(np.sum(np.exp(alone.astype(np.float64)) * (alone - together))), 0.0)
        first, theirs = int(np.argmax(alone)), int(np.argmax(together))
        kls.append(kl)
        agree += first == theirs
        if kl > limit or alone[first] - alone[theirs] > TIE_MARGIN:
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
        kl_ratio_max=max(kls) / floor if floor else None,
        limit_factor=LIMIT_FACTOR if floor else None,
        top1_agreement=agree / len(prompts),
        failing_sequences=failing,
    )
