"""Log-probabilities of step-wise logits: log-softmax, top-M ids, the coarse KLs, and greedy and
teacher-forced stepping of any engine with ``prefill``/``decode``. Pure math on arrays and engine calls;
what is stored (``harness.correctness.reference``) and judged (``harness.correctness.gate``) lives elsewhere.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float32)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def top_ids(logprobs: np.ndarray, k: int) -> np.ndarray:
    """Ids of the k largest entries, largest first, ties toward the lower id."""
    k = min(k, logprobs.shape[0])
    candidates = np.argpartition(-logprobs, k - 1)[:k]
    # widen to every id tied with the k-th value, then order by (-logprob, id)
    cutoff = logprobs[candidates].min()
    candidates = np.flatnonzero(logprobs >= cutoff)
    order = np.lexsort((candidates, -logprobs[candidates]))
    return candidates[order][:k]


def top_row(logprobs: np.ndarray, top_m: int) -> tuple[list[int], list[float]]:
    """(top-M ids, their log-probabilities to 6 decimals): one stored reference position."""
    best = top_ids(logprobs, top_m)
    return best.tolist(), [round(float(v), 6) for v in logprobs[best]]


def topk_pairs(ids: Sequence[int], logprobs, k: int, full: bool) -> list[tuple[int, float]]:
    """(id, log-probability to 4 decimals) of the top k: of a full row (``full``), else of stored top-M ids."""
    if full:
        best = top_ids(np.asarray(logprobs), k)
        return [(int(i), round(float(logprobs[i]), 4)) for i in best]
    return [(int(i), round(float(lp), 4)) for i, lp in zip(ids[:k], logprobs[:k])]


def greedy_steps(adapter, prompt_ids: Sequence[int], n_tokens: int, stop_ids: Sequence[int], top_m: int):
    """Greedy-decode step by step; return (tokens, top ids per step, top logprobs per step)."""
    tokens, ids_per_step, lps_per_step = [], [], []
    logits = adapter.prefill(prompt_ids)
    for _ in range(n_tokens):
        ids, lps = top_row(log_softmax(logits), top_m)
        ids_per_step.append(ids)
        lps_per_step.append(lps)
        tokens.append(ids[0])
        if tokens[-1] in stop_ids:
            break
        logits = adapter.decode(tokens[-1])
    return tokens, ids_per_step, lps_per_step


def forced_steps(adapter, prompt_ids: Sequence[int], tokens: Sequence[int], top_m: int):
    """Teacher forcing: (top ids per position, their logprobs) of the given continuation."""
    rows = [top_row(logprobs, top_m) for logprobs in iter_forced_logprobs(adapter, prompt_ids, tokens)]
    return [ids for ids, _ in rows], [lps for _, lps in rows]


def iter_forced_logprobs(adapter, prompt_ids: Sequence[int], tokens: Sequence[int]) -> Iterator[np.ndarray]:
    """Teacher forcing: the device's log-probabilities at every position of the given continuation, one
    position at a time (a long prompt's full-vocabulary rows would not fit in memory together)."""
    yield log_softmax(adapter.prefill(prompt_ids))
    for token in tokens[:-1]:
        yield log_softmax(adapter.decode(token))


def forced_logprobs(adapter, prompt_ids: Sequence[int], tokens: Sequence[int]) -> list[np.ndarray]:
    """``iter_forced_logprobs`` as a list."""
    return list(iter_forced_logprobs(adapter, prompt_ids, tokens))


def coarse_kl(ref_ids: Sequence[int], ref_logprobs: Sequence[float], device_logprobs: np.ndarray) -> float:
    """KL(reference || device) over the reference's top-M tokens plus one bucket for the rest.

    Coarsening can only lower a KL (data-processing inequality), so this never overstates divergence.
    """
    p_ref = np.exp(np.asarray(ref_logprobs, dtype=np.float64))
    lp_dev = device_logprobs[np.asarray(ref_ids)].astype(np.float64)
    kl = float(np.sum(p_ref * (np.asarray(ref_logprobs, dtype=np.float64) - lp_dev)))
    tail_ref = max(0.0, 1.0 - p_ref.sum())
    tail_dev = max(1e-12, 1.0 - np.exp(lp_dev).sum())
    if tail_ref > 1e-12:
        kl += tail_ref * np.log(tail_ref / tail_dev)
    return max(kl, 0.0)


def coarse_kl_reverse(ref_ids: Sequence[int], ref_logprobs: Sequence[float], device_logprobs: np.ndarray) -> float:
    """KL(device || reference) over the same partition as ``coarse_kl`` (the reference's top-M plus a
    tail bucket): also a lower bound of the full-vocabulary KL."""
    lp_ref = np.asarray(ref_logprobs, dtype=np.float64)
    lp_dev = device_logprobs[np.asarray(ref_ids)].astype(np.float64)
    p_dev = np.exp(lp_dev)
    kl = float(np.sum(p_dev * (lp_dev - lp_ref)))
    tail_dev = max(0.0, 1.0 - p_dev.sum())
    tail_ref = max(1e-12, 1.0 - np.exp(lp_ref).sum())
    if tail_dev > 1e-12:
        kl += tail_dev * np.log(tail_dev / tail_ref)
    return max(kl, 0.0)
