"""The gate's two per-prompt checks on an engine's step-wise logits (``harness.correctness.gate`` concludes):

- ``free_running``: the device greedy-decodes on its own; at the first position where its token departs from
  the reference's, each side's token must be in the other's top-k, and the comparison stops there.
- ``teacher_forced``: the reference's tokens are fed and every position is compared.
- ``forced_top1``: the same on an engine that exposes only its chosen token, one-way top-k.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.correctness import ties
from harness.correctness.logprobs import (
    coarse_kl,
    coarse_kl_reverse,
    iter_forced_logprobs,
    log_softmax,
    top_ids,
)
from harness.correctness.logprobs import topk_pairs as _topk_pairs
from harness.correctness.stored_reference import PromptReference
from harness.records.correctness import Divergence, PromptResult


def free_running(
    adapter, index: int, ref: PromptReference, k: int, stop_ids: Sequence[int]
) -> tuple[bool, Optional[int], int, Optional[Divergence]]:
    """(ok, divergence position or None, tokens matched, divergence details). A miss within the tie margin
    (``harness.correctness.ties``) is ok, its gap in the divergence's ``tie_gap``."""
    logits = adapter.prefill(ref.prompt_ids)
    for position, ref_token in enumerate(ref.tokens):
        logprobs = log_softmax(logits)
        device_token = int(top_ids(logprobs, 1)[0])
        if device_token != ref_token:
            ref_ids, ref_lps = ref.top_ids[position], ref.top_logprobs[position]
            dev_top = top_ids(logprobs, k).tolist()
            why, gap = ties.topk_miss(ref_ids, ref_lps, logprobs, dev_top, k, ref_token=ref_token)
            ok = not why
            detail = Divergence(
                prompt=index,
                position=position,
                reference_token=ref_token,
                device_token=device_token,
                reference_topk=_topk_pairs(ref_ids, ref_lps, k, False),
                device_topk=_topk_pairs([], logprobs, k, True),
                ok=ok,
                why=why,
                tie_gap=gap,
            )
            return ok, position, position, detail
        if device_token in stop_ids or position == len(ref.tokens) - 1:
            break
        logits = adapter.decode(device_token)
    # Same tokens all the way: the reference stopped at EOS only if the device did too (same token).
    return True, None, len(ref.tokens), None


def teacher_forced(adapter, index: int, ref: PromptReference, k: int) -> PromptResult:
    """Feed the reference's tokens and compare every position: two-way top-k (a miss within the tie margin
    counted, not failed), top-1, KL both ways, cosine."""
    result = PromptResult(prompt=index, kind=ref.kind)
    device = iter_forced_logprobs(adapter, ref.prompt_ids, ref.tokens)
    kls, reverse, cosines, top1, matches = [], [], [], 0, []
    for position, logprobs in enumerate(device):
        ref_ids, ref_lps = ref.top_ids[position], ref.top_logprobs[position]
        ref_token = ref_ids[0]  # the reference's greedy choice (a long prompt feeds its own text instead)
        dev_top = top_ids(logprobs, k).tolist()
        device_token = dev_top[0]
        top1 += device_token == ref_token
        matches.append(int(device_token == ref_token))
        kls.append(coarse_kl(ref_ids, ref_lps, logprobs))
        reverse.append(coarse_kl_reverse(ref_ids, ref_lps, logprobs))
        a, b = np.asarray(ref_lps, dtype=np.float64), logprobs[np.asarray(ref_ids)].astype(np.float64)
        cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
        why, gap = ties.topk_miss(ref_ids, ref_lps, logprobs, dev_top, k)
        ties.count(result, gap)
        if why:
            device_topk = _topk_pairs([], logprobs, k, True)
            _violated(
                result, _miss(ref, index, position, ref_token, device_token, device_topk, k, f"teacher-forced: {why}")
            )
    result.forced_ok = result.forced_violations == 0
    result.top1_match_rate = top1 / len(ref.tokens)
    result.kl_mean, result.kl_max = float(np.mean(kls)), float(np.max(kls))
    result.cosine_min = float(np.min(cosines))
    result.position_kl = [float(f"{kl:.4g}") for kl in kls]  # compact: 4 digits are plenty against a floor
    result.position_top1 = matches
    result.position_kl_reverse = [float(f"{kl:.4g}") for kl in reverse]
    return result


def forced_top1(adapter, index: int, ref: PromptReference, k: int) -> PromptResult:
    """Teacher-forced on an engine that exposes only the token it chooses (GenAI's static NPU pipeline): at
    every position that token, given the reference's prefix, must be in the reference's top-k, or within the
    tie margin of its k-th (one way: the device's own top-k is unknowable)."""
    result = PromptResult(prompt=index, kind=ref.kind)
    chosen = adapter.teacher_forced_top1(ref.prompt_ids, ref.tokens)
    for position, (device_token, ref_token) in enumerate(zip(chosen, ref.tokens)):
        if device_token in ref.top_ids[position][:k]:
            continue
        gap = ties.reference_gap(ref.top_ids[position], ref.top_logprobs[position], device_token, k)
        if ties.is_tie(gap):
            ties.count(result, gap)
        else:
            why = f"teacher-forced (top-1 only): device token {device_token} not in reference top-{k}"
            _violated(result, _miss(ref, index, position, ref_token, device_token, [], k, why))
    result.forced_ok = result.forced_violations == 0
    greedy = [ids[0] for ids in ref.top_ids]  # the reference's choices (a long prompt feeds its own text)
    result.top1_match_rate = sum(d == r for d, r in zip(chosen, greedy)) / len(ref.tokens)
    result.position_top1 = [int(d == r) for d, r in zip(chosen, greedy)]
    return result


def _miss(ref: PromptReference, index: int, position: int, ref_token, device_token, device_topk, k: int, why: str):
    """A failed top-k check at a teacher-forced position, with the reference's top-k there."""
    reference_topk = _topk_pairs(ref.top_ids[position], ref.top_logprobs[position], k, False)
    return Divergence(
        prompt=index,
        position=position,
        reference_token=ref_token,
        device_token=device_token,
        reference_topk=reference_topk,
        device_topk=device_topk,
        ok=False,
        why=why,
    )


def _violated(result: PromptResult, divergence: Divergence) -> None:
    """Count a teacher-forced top-k violation; the first one is kept with its details."""
    result.forced_violations += 1
    if result.forced_first_violation is None:
        result.forced_first_violation = divergence.position
        result.failures.append(divergence)
