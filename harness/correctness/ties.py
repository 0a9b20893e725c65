"""The tie margin of every top-k check: a miss by at most ``TIE_MARGIN`` nats is a near tie, not a failure.

A top-k check asks whether a token is among the k most likely of one side. Where that side's k-th and
(k+1)-th candidates are a few hundredths of a nat apart (flat distributions: random-weights models, the
tail of any top-k), a clean engine in another precision moves a token across the k-th place by rounding: a
clean Q8_0 point on a random-weights Llama failed a short prompt's prefill top-k on two candidates 0.06 nats
apart while its KL was under the drift line. So a miss is forgiven when the missing token's log-probability,
on the side whose top-k it missed, lies within ``TIE_MARGIN`` of that side's k-th candidate; the gap is
recorded (``PromptResult.topk_ties``, ``topk_tie_gap``) and the margin is stated in ``Correctness.tie_margin``.

The margin is the flip rate's (``harness.correctness.class_check``), 0.1 nats: clean fp32 and eager attention
changed the reference's top-1 only where it led its second by at most 0.031 nats. A token the reference did
not store (outside its top-M) is never a near tie: its log-probability is unknown, only below the M-th's.

Every top-k check takes it (``CHECKS``), the prefill positions' (``harness.correctness.prefill``) on one condition:
there a near tie is forgiven only where that position's KL stays under the prefill phase's fail line
(``PREFILL_CHECK``). The project's own fault that swaps the top-1 with the 6th candidate of a shorter prefix
(tests/faults.py ``PrefillTailTopSwap``) sat 0.078 nats under the 5th on the tiny model's chat prompt, inside
the margin, but the swap moves that position's KL far above the line, while rounding that moves a token across
a near tie barely moves it.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.records.correctness import PromptResult

TIE_MARGIN = 0.1  # nats: within it of the k-th candidate, a token outside the top-k is a near tie
# The checks that take it (``Correctness.tie_margin_checks``): the step-wise ones by ``gate.CHECKS`` names, then
# the one-way checks of the text path, the stopping check and the speculative gate; ``topk-prefill`` on its
# condition (``prefill_check``).
CHECKS = ("topk-free", "topk-forced", "forced-top1", "text path", "stopping", "speculative")
PREFILL_CHECK = "topk-prefill"


def prefill_check(line: float, factor: float) -> str:
    """The prefill positions' entry in ``Correctness.tie_margin_checks``: the check and its condition."""
    return f"{PREFILL_CHECK} where the position's KL <= {line:.3g} nats ({factor:g}x the prefill phase's floor)"


def reference_gap(ref_ids: Sequence[int], ref_lps: Sequence[float], token: int, k: int) -> Optional[float]:
    """Nats by which ``token`` falls short of the reference's k-th candidate (0 inside its top-k); None where the
    reference did not store it (outside its top-M: no known gap)."""
    ids = list(ref_ids)
    if token in ids[:k]:
        return 0.0
    if token not in ids or len(ref_lps) < k:
        return None
    return max(0.0, float(ref_lps[k - 1]) - float(ref_lps[ids.index(token)]))


def device_gap(device_logprobs: np.ndarray, device_top: Sequence[int], token: int, k: int) -> float:
    """Nats by which ``token`` falls short of the device's k-th candidate (0 inside its top-k)."""
    if token in list(device_top[:k]):
        return 0.0
    return max(0.0, float(device_logprobs[device_top[k - 1]]) - float(device_logprobs[token]))


def is_tie(gap: Optional[float], margin: Optional[float] = TIE_MARGIN) -> bool:
    """A miss by ``gap`` nats is a near tie: known and within the margin (None: a check without one)."""
    return gap is not None and margin is not None and gap <= margin


def within(ref_ids: Sequence[int], ref_lps: Sequence[float], token: int, k: int, margin: float = TIE_MARGIN) -> bool:
    """The one-way check: ``token`` is in the reference's top-k, or a near tie of its k-th candidate."""
    return is_tie(reference_gap(ref_ids, ref_lps, token, k), margin)


def topk_miss(
    ref_ids: Sequence[int],
    ref_lps: Sequence[float],
    device_logprobs: np.ndarray,
    device_top: Sequence[int],
    k: int,
    ref_token: Optional[int] = None,
    margin: Optional[float] = TIE_MARGIN,
) -> tuple[str, Optional[float]]:
    """The two-way top-k inclusion at one position: the device's top-1 must be in the reference's top-k, and the
    reference's token (its top-1 unless given) in the device's. (why it fails, "" when it holds; the widest gap
    of a miss forgiven as a near tie, None when nothing was missed). ``margin`` None: no miss is forgiven."""
    device_token = int(device_top[0])
    ref_token = int(ref_ids[0]) if ref_token is None else int(ref_token)
    if device_token in list(ref_ids[:k]) and ref_token in list(device_top[:k]):
        return "", None
    outside_ref = reference_gap(ref_ids, ref_lps, device_token, k)
    outside_device = device_gap(device_logprobs, device_top, ref_token, k)
    if not is_tie(outside_ref, margin):
        return f"device token {device_token} not in reference top-{k}", None
    if not is_tie(outside_device, margin):
        return f"reference token {ref_token} not in device top-{k}", None
    return "", max(outside_ref or 0.0, outside_device)


def count(result: PromptResult, gap: Optional[float]) -> None:
    """Count a top-k miss forgiven as a near tie on a prompt's result, keeping the widest gap (None: no tie)."""
    if gap is None:
        return
    result.topk_ties += 1
    result.topk_tie_gap = max(gap, result.topk_tie_gap or 0.0)


def notes(results: Sequence[PromptResult], k: int) -> list[str]:
    """The gate's note on the misses forgiven as near ties (empty where none was)."""
    tied = [r for r in results if r.topk_ties]
    if not tied:
        return []
    widest = max(r.topk_tie_gap or 0.0 for r in tied)
    return [
        f"top-{k} near ties on prompt(s) {[r.prompt for r in tied]}: {sum(r.topk_ties for r in tied)} miss(es) "
        f"within the {TIE_MARGIN:g}-nat tie margin of the k-th candidate (widest {widest:.3g} nats), not failed"
    ]
