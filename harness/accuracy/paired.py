"""Paired accuracy verdicts: a point's per-document outcomes against the HF reference's on the same documents.

0/1 outcomes (acc, acc_norm, exact_match): McNemar's test on the discordant pairs, and beside it the flip rate
(discordant pairs over items: the share of items whose outcome changed, either way). Other per-item values
(log-likelihoods behind perplexity, bits per byte): a paired sign-flip permutation test. Both get the
delta's 95 % interval from a paired bootstrap (resampling documents, both sides together). Optional
non-inferiority margins (MLPerf's "keep 99 % of the reference") judge the interval's worse end.
Pure functions, no I/O; scipy and statsmodels load on first use.
"""

from __future__ import annotations

import warnings
from typing import Callable, NamedTuple, Optional

import numpy as np

from harness.records.accuracy import PairedDelta, TaskOutcomes

RESAMPLES = 2000  # bootstrap and permutation resamples: p-values resolve to 1/2001
SEED = 0  # fixed, so the same outcomes give the same interval and p-value on every run
BATCH_VALUES = 2**22  # resampled values held at once per array (32 MiB); scipy loops per batch in Python
EXACT_BELOW = 25  # McNemar: the exact binomial test when fewer pairs disagree, else chi-square

# lm-eval's aggregations (lm_eval.api.metrics) over per-item values ``v`` (weights ``w``: words or bytes),
# vectorised along ``axis`` for the resampling; ``compare`` checks each reproduces lm-eval's own score.
AGGREGATIONS: dict[str, Callable] = {
    "mean": lambda v, w, axis=-1: np.mean(v, axis=axis),
    "perplexity": lambda v, w, axis=-1: np.exp(-np.mean(v, axis=axis)),
    "weighted_perplexity": lambda v, w, axis=-1: np.exp(-np.sum(v, axis=axis) / np.sum(w, axis=axis)),
    "bits_per_byte": lambda v, w, axis=-1: -np.sum(v, axis=axis) / np.sum(w, axis=axis) / np.log(2),
}

WEIGHTED = frozenset({"weighted_perplexity", "bits_per_byte"})


class Comparison(NamedTuple):
    paired: dict[str, dict[str, PairedDelta]]
    unpaired: dict[str, dict[str, str]]  # task -> metric -> why it has no paired delta
    verdict: Optional[str]  # non-inferiority over the margined metrics: pass | fail | None


def paired_delta(
    point,
    reference,
    weights=None,
    aggregation: str = "mean",
    higher_is_better: bool = True,
    margin: Optional[float] = None,
) -> PairedDelta:
    """Point minus reference over documents given in the same order on both sides."""
    x, y = np.asarray(point, dtype=float), np.asarray(reference, dtype=float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    if not x.shape == y.shape == w.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"expected two equally long lists of at least 2 per-item outcomes, got {len(x)} and {len(y)}")
    aggregate = AGGREGATIONS[aggregation]

    def statistic(a, b, wa, axis=-1):
        return aggregate(a, wa, axis) - aggregate(b, wa, axis)

    binary = aggregation == "mean" and bool(np.isin(np.concatenate([x, y]), (0.0, 1.0)).all())
    if binary:
        p_value = _mcnemar(x, y)
    else:  # sign flips within each document's pair; w is a property of the document, the same on both sides
        p_value = _permutation_p(lambda a, b, axis=-1: statistic(a, b, w, axis), x, y)
    low, high = _interval(statistic, x, y, w)
    delta, ref = float(statistic(x, y, w)), float(aggregate(y, w))
    flips = int(np.sum(x != y)) if binary else None  # McNemar's discordant pairs
    verdict = None
    if margin is not None:
        allowed = (1 - margin) * abs(ref)  # keep `margin` of the reference's score
        verdict = low >= -allowed if higher_is_better else high <= allowed
    return PairedDelta(
        delta=delta,
        low=low,
        high=high,
        p_value=p_value,
        items=len(x),
        reference=ref,
        test="mcnemar" if binary else "paired bootstrap",
        margin=margin,
        non_inferior=verdict,
        flips=flips,
        flip_rate=flips / len(x) if flips is not None else None,
    )


def _mcnemar(x: np.ndarray, y: np.ndarray) -> float:
    from statsmodels.stats.contingency_tables import mcnemar

    # rows: the reference right / wrong; columns: the point right / wrong
    table = [
        [np.sum((y == 1) & (x == 1)), np.sum((y == 1) & (x == 0))],
        [np.sum((y == 0) & (x == 1)), np.sum((y == 0) & (x == 0))],
    ]
    discordant = table[0][1] + table[1][0]
    return float(mcnemar(table, exact=discordant < EXACT_BELOW, correction=True).pvalue)


def _permutation_p(statistic, x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import permutation_test

    result = permutation_test(
        (x, y),
        statistic,
        permutation_type="samples",
        vectorized=True,
        n_resamples=RESAMPLES,
        batch=_batch(len(x)),
        rng=np.random.default_rng(SEED),
    )
    return float(min(1.0, result.pvalue))


def _batch(items: int) -> int:
    return max(16, min(RESAMPLES, BATCH_VALUES // items))


def _interval(statistic, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """The delta's 95 % paired-bootstrap interval: BCa, or percentile where BCa is undefined (no variation)."""
    from scipy.stats import bootstrap

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DegenerateDataWarning: BCa's NaN is handled below
            ci = bootstrap(
                (x, y, w),
                statistic,
                paired=True,
                vectorized=True,
                n_resamples=RESAMPLES,
                batch=_batch(len(x)),
                method=method,
                rng=np.random.default_rng(SEED),
            ).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return float(ci.low), float(ci.high)
    raise ValueError("the bootstrap interval of the delta is not finite")


def compare(
    scores: dict[str, dict],
    outcomes: dict[str, TaskOutcomes],
    reference_scores: dict[str, dict],
    reference_outcomes: Optional[dict[str, TaskOutcomes]],
    why_unpaired: Optional[str] = None,
    margins: Optional[dict] = None,
) -> Comparison:
    """Every metric both sides scored, paired where both have per-item outcomes; the reason where not.

    ``margins``: the scenario's ``accuracy.non_inferiority``, ``{task: fraction}`` or ``{task: {metric: fraction}}``."""
    margins = margins or {}

    def margin(task: str, metric: str) -> Optional[float]:
        found = margins.get(task)
        return found.get(metric) if isinstance(found, dict) else found

    paired: dict[str, dict[str, PairedDelta]] = {}
    unpaired: dict[str, dict[str, str]] = {}
    for task, named in margins.items():  # a margin on a metric the task does not report is never judged
        for metric in named if isinstance(named, dict) else ():
            if metric not in reference_scores.get(task, {}) or metric not in scores.get(task, {}):
                reported = [m for m in scores.get(task, {}) if not m.endswith("_stderr") and m != "items"]
                unpaired.setdefault(task, {})[metric] = (
                    f"accuracy.non_inferiority names {task}.{metric}, which is not scored on both sides "
                    f"(metrics: {', '.join(reported)})"
                )
    for task, metrics in scores.items():
        for metric in metrics:
            if metric.endswith("_stderr") or metric == "items" or metric not in reference_scores.get(task, {}):
                continue
            try:
                found = _pair(
                    task,
                    metric,
                    scores,
                    outcomes,
                    reference_scores,
                    reference_outcomes,
                    why_unpaired,
                    margin(task, metric),
                )
            except ValueError as exc:
                found = str(exc)
            if isinstance(found, str):
                unpaired.setdefault(task, {})[metric] = found
            else:
                paired.setdefault(task, {})[metric] = found
    return Comparison(paired, unpaired, _verdict(paired, unpaired, margin))


def _pair(task, metric, scores, outcomes, reference_scores, reference_outcomes, why_unpaired, margin):
    """A PairedDelta, or why there is none."""
    if reference_outcomes is None:
        return why_unpaired or "the reference has no per-item outcomes"
    if task not in outcomes or task not in reference_outcomes:
        return f"lm-eval logged no per-document outcomes for {task} (a group's score aggregates its tasks')"
    mine, theirs = outcomes[task], reference_outcomes[task]
    aggregation = mine.aggregation.get(metric, "")
    if aggregation not in AGGREGATIONS:
        return f"aggregation {aggregation or 'unknown'!r} has no paired statistic here ({', '.join(AGGREGATIONS)} do)"
    if metric not in mine.values or metric not in theirs.values:
        return f"per-item {metric} values are missing or not numbers (e.g. (gold, prediction) pairs)"
    if aggregation in WEIGHTED and (metric not in mine.weights or metric not in theirs.weights):
        return f"aggregation {aggregation!r} needs per-item weights (words or bytes), and {metric} has none"
    sides = (("point", mine, scores[task][metric]), ("reference", theirs, reference_scores[task][metric]))
    for side, source, score in sides:
        if not np.isclose(_aggregate(source, metric, aggregation), score, rtol=1e-6, atol=1e-9):
            return (
                f"the {side}'s per-item {metric} values do not reproduce lm-eval's score {score:g} "
                f"(aggregation {aggregation})"
            )
    common = sorted(set(mine.doc_ids) & set(theirs.doc_ids))
    if len(common) < 2:
        return f"{len(common)} document(s) scored on both sides; a paired test needs at least 2"
    x, wx = _column(mine, metric, common)
    y, wy = _column(theirs, metric, common)
    if wx is not None and not np.array_equal(wx, wy):
        return f"the two sides weigh {task}'s documents differently ({metric}'s words or bytes differ)"
    return paired_delta(x, y, wx, aggregation, mine.higher_is_better.get(metric, True), margin)


def _aggregate(source: TaskOutcomes, metric: str, aggregation: str) -> float:
    values = np.asarray(source.values[metric], dtype=float)
    weights = source.weights.get(metric)
    return float(AGGREGATIONS[aggregation](values, None if weights is None else np.asarray(weights, dtype=float)))


def _column(source: TaskOutcomes, metric: str, docs: list[int]) -> tuple[np.ndarray, Optional[np.ndarray]]:
    position = {doc: i for i, doc in enumerate(source.doc_ids)}
    index = [position[doc] for doc in docs]
    weights = source.weights.get(metric)
    return (
        np.asarray(source.values[metric], dtype=float)[index],
        None if weights is None else np.asarray(weights, dtype=float)[index],
    )


def _verdict(paired, unpaired, margin) -> Optional[str]:
    """fail when a margined metric falls short; pass when every margined metric was judged and kept it."""
    judged = [d.non_inferior for metrics in paired.values() for d in metrics.values() if d.margin is not None]
    unjudged = [m for task, metrics in unpaired.items() for m in metrics if margin(task, m) is not None]
    if not judged and not unjudged:
        return None
    if not all(judged):
        return "fail"
    return None if unjudged else "pass"
