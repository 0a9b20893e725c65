"""Batch invariance: each sequence of a batch against the same prompt run alone.

A point with ``batch_size`` > 1 is timed on batches, but the gate runs one sequence at a time, so an
engine that mixes sequences in a batch (a wrong stride, a shared KV slot, a mask across rows) passes it.
Here ``batch_size`` distinct prompts of one length run as one batch (``Adapter.prefill_batch``: the last
position's logits per sequence) and each alone (``prefill``); each sequence's KL(alone || batch) over the
full vocabulary must stay under ``KL_LIMIT`` and its top-1 must be the same. Batched kernels may round
differently from single-sequence ones, so the limit sits well above rounding (a bf16 batch of 4 on
tiny-llama: KL below 1e-5) and far below a mixed-up sequence (KL of order 1).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.correctness.logprobs import log_softmax
from harness.records.text_path import BatchInvariance

KL_LIMIT = 1e-2


def skip_reason(adapter, batch_size: int) -> str | None:
    if batch_size <= 1:
        return "batch_size 1: nothing batched"
    if not adapter.supports_batch_logits:
        return f"{adapter.name} exposes no batched logits (prefill_batch), so a batch's sequences cannot be compared"
    if not adapter.supports_logits:
        return f"{adapter.name} exposes no step-wise logits to run each prompt alone"
    return None


def check(adapter, prompts: Sequence[Sequence[int]]) -> BatchInvariance:
    """``prompts``: one per sequence of the batch, all of one length."""
    why = skip_reason(adapter, len(prompts))
    if why:
        return BatchInvariance(skipped=why, batch_size=len(prompts))
    batched = np.asarray(adapter.prefill_batch(prompts), dtype=np.float32)
    kls, agree, failing = [], 0, []
    for index, prompt in enumerate(prompts):
        alone, together = log_softmax(adapter.prefill(prompt)), log_softmax(batched[index])
        kl = float(np.sum(np.exp(alone.astype(np.float64)) * (alone - together)))
        same = int(np.argmax(alone)) == int(np.argmax(together))
        kls.append(max(kl, 0.0))
        agree += same
        if kl > KL_LIMIT or not same:
            failing.append(index)
    return BatchInvariance(
        verdict="fail" if failing else "pass",
        batch_size=len(prompts),
        kl_max=max(kls),
        kl_limit=KL_LIMIT,
        top1_agreement=agree / len(prompts),
        failing_sequences=failing,
    )
