"""What the regression check (``harness.regression.check``) computes around its launch test
(``harness.regression.launch_test``): Benjamini-Hochberg across the run's tests, a bootstrap interval of the
change, and the equivalence test behind the verdict *same*."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from harness.measure.launch_stats import CONFIDENCE, SEED


def fdr_adjust(p_values: Sequence[float], q: float) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): a test is a discovery at FDR ``q`` when its
    adjusted value is <= q."""
    from statsmodels.stats.multitest import multipletests

    if not p_values:
        return []
    return [float(v) for v in multipletests(list(p_values), alpha=q, method="fdr_bh")[1]]


def ratio_interval(base: Sequence[float], new: Sequence[float]) -> tuple[Optional[float], Optional[float]]:
    """A seeded percentile bootstrap 95 % interval of median(new) / median(base): each side resampled on
    its own (2000 resamples), as scipy.stats.bootstrap does for two samples, in one numpy pass."""
    import numpy as np

    if min(base) <= 0 or (len(set(base)) == 1 and len(set(new)) == 1):
        return None, None
    rng = np.random.default_rng(SEED)
    base_values, new_values = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    resampled_new = new_values[rng.integers(0, len(new_values), (2000, len(new_values)))]
    resampled_base = base_values[rng.integers(0, len(base_values), (2000, len(base_values)))]
    ratios = np.median(resampled_new, axis=1) / np.median(resampled_base, axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


EQUIVALENCE_ALPHA = 0.05  # each one-sided test of TOST: a 90 % interval of the log ratio inside the bounds


def equivalence_p(base: Sequence[float], new: Sequence[float], threshold: float) -> Optional[float]:
    """Two one-sided tests (TOST, Welch) on log launch values that the ratio new / base lies within
    ``1 / (1 + threshold) .. 1 + threshold``: the larger of the two one-sided p-values (<= 0.05: the
    ratio's 90 % interval is inside the bounds, the verdict *same*). None for non-positive values."""
    import numpy as np
    from scipy.special import stdtr

    if min(base) <= 0 or min(new) <= 0:
        return None
    bound = math.log1p(threshold)
    log_base, log_new = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    if np.ptp(log_base) == 0 and np.ptp(log_new) == 0:  # no spread: the ratio is known exactly
        return 0.0 if abs(float(log_new[0] - log_base[0])) < bound else 1.0
    # Welch's t (scipy.stats.ttest_ind(equal_var=False) by hand: it is called for every test of a run)
    share_new, share_base = np.var(log_new, ddof=1) / len(log_new), np.var(log_base, ddof=1) / len(log_base)
    se = math.sqrt(share_new + share_base)
    df = (share_new + share_base) ** 2 / (
        share_new**2 / max(len(log_new) - 1, 1) + share_base**2 / max(len(log_base) - 1, 1)
    )
    difference = float(np.mean(log_new) - np.mean(log_base))
    upper = stdtr(df, (difference - bound) / se)  # H0: the ratio is 1 + threshold or more
    lower = 1 - stdtr(df, (difference + bound) / se)  # H0: 1 / (1 + threshold) or less
    return float(max(upper, lower))
