"""What the regression check can see: the minimum detectable change of a point and metric, and the launches a
side an inconclusive comparison would need. Pure functions, seeded, no I/O.

**Method.** The check calls a metric *different* (worse) when its one-sided exact Mann-Whitney U test on launch
values reaches the level BH asks of it and the change of the medians is past the threshold. The detectable
change is the smallest true worsening that gets that verdict in ``POWER`` (80 %) of nights, found by simulation:
``TRIALS`` seeded nights of launch values drawn lognormal with the measured launch-to-launch CV, the new side
shifted by the change; U is compared with the exact critical value of the null distribution (counted from the
Gaussian binomial recurrence, as scipy's exact test), the medians with the threshold. The level is the one a
*lone* regression among the run's ``tests`` needs: ``fdr / tests`` (Benjamini-Hochberg's smallest bar).
The same random numbers serve every change tried: each night has one smallest shift it calls different (the
larger of the shift that lifts U to its critical value and the one that lifts the medians past the threshold),
so the power at any change is the share of nights below it and the detectable change their 80th percentile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

POWER = 0.8
TRIALS = 4000
SEED = 0
MOST_LAUNCHES = 50  # the inconclusive advice stops here: beyond it, widen the threshold instead
_LARGEST = 4.0  # changes beyond +400 % are not searched


def alpha(fdr: float, tests: int) -> float:
    """The p-value a lone regression among ``tests`` launch-level tests needs under BH at ``fdr``."""
    return fdr / max(1, tests)


@lru_cache(maxsize=None)
def _null(n_new: int, n_base: int) -> tuple[float, ...]:
    """P(U = u), u = 0 .. n_new * n_base, for U = pairs (new > base) under no change, no ties."""
    counts = _counts(n_new, n_base)
    total = math.comb(n_new + n_base, n_new)
    return tuple(c / total for c in counts)


@lru_cache(maxsize=None)
def _counts(n: int, m: int) -> tuple[int, ...]:
    if n == 0 or m == 0:
        return (1,)
    top = _counts(n - 1, m)  # the largest value is a new one: it beats all m base values
    rest = _counts(n, m - 1)  # ... or a base one: it beats no new value
    out = [0] * (n * m + 1)
    for u, c in enumerate(top):
        out[u + m] += c
    for u, c in enumerate(rest):
        out[u] += c
    return tuple(out)


@lru_cache(maxsize=None)
def critical_u(n_base: int, n_new: int, level: float) -> Optional[int]:
    """The smallest U whose exact one-sided p-value is <= ``level``; None when no U reaches it."""
    probabilities = _null(n_new, n_base)
    tail = 0.0
    found = None
    for u in range(len(probabilities) - 1, -1, -1):
        tail += probabilities[u]
        if tail > level * (1 + 1e-9):
            break
        found = u
    return found


@lru_cache(maxsize=64)
def _draws(n_base: int, n_new: int):
    import numpy as np

    rng = np.random.default_rng(SEED)
    return rng.standard_normal((TRIALS, n_base)), rng.standard_normal((TRIALS, n_new))


@lru_cache(maxsize=64)
def _keys(n_base: int, n_new: int, level: float):
    """Per simulated night, in units of the log-scale sigma: ``k``, the worse-direction log shift past which
    U reaches its critical value (a pair counts when new + shift > base), and ``m``, the nights' own
    median(new) - median(base). None when no U reaches ``level``. A night with shift s is called different
    when s > sigma * k and s + sigma * m passes the threshold: the power at every shift follows from
    these two numbers, so no shift needs simulating twice."""
    import numpy as np

    critical = critical_u(n_base, n_new, level)
    if critical is None:
        return None
    base_z, new_z = _draws(n_base, n_new)
    gaps = np.sort((base_z[:, None, :] - new_z[:, :, None]).reshape(TRIALS, -1), axis=1)
    return gaps[:, critical - 1], np.median(new_z, axis=1) - np.median(base_z, axis=1)


def _needed_shifts(cv: float, n_base: int, n_new: int, level: float, threshold: float, higher_is_better: bool):
    """Per simulated night, the smallest worse-direction log shift the check calls different."""
    import numpy as np

    keys = _keys(n_base, n_new, level)
    if keys is None:
        return None
    k, m = keys
    sigma = math.sqrt(math.log1p(cv * cv))
    past = -math.log1p(-threshold) if higher_is_better else math.log1p(threshold)  # the threshold, as a log shift
    return np.maximum(sigma * k, past - sigma * m)


def _shift(change: float, higher_is_better: bool) -> float:
    """A relative worsening as a log shift in the worse direction (tokens/s fall, latencies rise)."""
    return -math.log1p(-change) if higher_is_better else math.log1p(change)


def _change(shift: float, higher_is_better: bool) -> float:
    return -math.expm1(-shift) if higher_is_better else math.expm1(shift)


def detection_rate(
    cv: float, change: float, n_base: int, n_new: int, level: float, threshold: float, higher_is_better: bool = False
) -> float:
    """The share of simulated nights whose verdict is *different* (worse) for a true worsening ``change``."""
    import numpy as np

    if higher_is_better and change >= 1:
        return 1.0
    needed = _needed_shifts(cv, n_base, n_new, level, threshold, higher_is_better)
    if needed is None:
        return 0.0
    return float(np.mean(needed < _shift(change, higher_is_better)))


def detectable_change(
    cv: float, n_base: int, n_new: int, level: float, threshold: float, higher_is_better: bool = False
) -> Optional[float]:
    """The smallest worsening the check calls *different* in ``POWER`` of nights; None when none up to
    ``_LARGEST`` is (too few launches for ``level``, or noise beyond any threshold)."""
    import numpy as np

    if not math.isfinite(cv) or cv < 0:
        return None
    needed = _needed_shifts(cv, n_base, n_new, level, threshold, higher_is_better)
    if needed is None:
        return None
    shift = float(np.sort(needed)[math.ceil(POWER * TRIALS) - 1])
    change = _change(shift, higher_is_better)
    return None if change > _LARGEST else change


def launches_to_detect(
    cv: float, change: float, level: float, threshold: float, higher_is_better: bool
) -> Optional[int]:
    """Launches a side (equal) for a true worsening ``change`` to be called *different* in ``POWER`` of nights;
    None beyond ``MOST_LAUNCHES``. Power rises with launches, so the count is found by bisection."""

    def enough(n: int) -> bool:
        return detection_rate(cv, change, n, n, level, threshold, higher_is_better) >= POWER

    if not enough(MOST_LAUNCHES):
        return None
    low, high = 1, MOST_LAUNCHES  # enough(high), and 1 launch never is
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def launches_to_show_same(cv: float, change: float, threshold: float, equivalence_alpha: float = 0.05) -> Optional[int]:
    """Launches a side for the equivalence test (TOST on log values, ``significance.equivalence_p``) to show
    a true change ``change`` within ``threshold`` in ``POWER`` of nights (normal approximation); None beyond
    ``MOST_LAUNCHES`` or when the change is not inside the threshold."""
    from scipy.stats import norm, t

    margin = math.log1p(threshold) - abs(math.log1p(change))
    if margin <= 0:
        return None
    sigma = math.sqrt(math.log1p(cv * cv))
    for n in range(2, MOST_LAUNCHES + 1):
        se = sigma * math.sqrt(2 / n)
        if se == 0 or margin / se >= t.ppf(1 - equivalence_alpha, 2 * n - 2) + norm.ppf(POWER):
            return n
    return None


def cv_of(values) -> Optional[float]:
    """The launch-to-launch CV of positive launch values, from the spread of their logs (lognormal)."""
    import numpy as np

    logs = np.log(np.asarray([v for v in values if v > 0], dtype=float))
    if len(logs) < 2:
        return None
    return math.sqrt(math.expm1(float(np.var(logs, ddof=1))))


def pooled_cv(base, new) -> Optional[float]:
    """The launch-to-launch CV both sides share: their log variances pooled by degrees of freedom."""
    a, b = cv_of(base), cv_of(new)
    if a is None or b is None:
        return a if b is None else b
    var_a, var_b = math.log1p(a * a), math.log1p(b * b)
    pooled = ((len(base) - 1) * var_a + (len(new) - 1) * var_b) / (len(base) + len(new) - 2)
    return math.sqrt(math.expm1(pooled))


@dataclass(frozen=True)
class Detectable:
    """A metric's noise and what the regression check can see of it at the point's own launches, a side."""

    metric: str
    limit: float
    launches: int
    cv: float  # launch-to-launch CV of the launch values
    within_cv: Optional[float]  # variance components (harness.measure.noise)
    between_cv: Optional[float]
    change: Optional[float]  # the minimum detectable worsening; None: not at any size (too few launches)

    def describe(self) -> str:
        seen = "none at any size" if self.change is None else f"{self.change:.1%}"
        parts = [f"launch CV {self.cv:.1%}"]
        if self.between_cv is not None and self.within_cv is not None:
            parts.append(f"between launches {self.between_cv:.1%}, within {self.within_cv:.1%} a round")
        return f"{self.metric} {seen} (limit {self.limit:.0%}; {'; '.join(parts)})"


def detectable(record, thresholds, level: float, launches: Optional[int] = None) -> list[Detectable]:
    """What ``harness gate`` could detect at this record's launches (``launches``: at that many a side, with the
    record's noise: ``harness plan``), compared with a baseline alike, for every threshold whose metric has an
    interval over two or more launches."""
    out = []
    for threshold, found in testable(record, thresholds):
        cv = abs(float(found.cv))
        n = found.launches if launches is None else launches
        change = detectable_change(cv, n, n, level, threshold.limit, threshold.higher_is_better)
        out.append(Detectable(threshold.metric, threshold.limit, n, cv, found.within_cv, found.between_cv, change))
    return out


def testable(record, thresholds) -> list:
    """(threshold, interval) for every threshold whose metric the record measured over two or more launches:
    the launch-level tests ``harness gate`` would run on it."""
    out = []
    for threshold in thresholds:
        found = record.samples.intervals.get(threshold.metric)
        if found is not None and found.launches >= 2 and found.cv is not None:
            out.append((threshold, found))
    return out
