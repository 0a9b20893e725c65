"""The one-sided Mann-Whitney U test on launch values (asv's test), the regression check's launch test
(``harness.regression.launch_test``, registered as ``mann-whitney``): exact without ties, an exact permutation
test with them; its power comes from ``harness.regression.launch_power``'s simulation of this very test."""

from __future__ import annotations

import math
from typing import Optional, Sequence, cast

from harness.measure.launch_stats import SEED
from harness.regression import launch_power
from harness.regression.launch_test import Case, Comparison, LaunchTest


class MannWhitney(LaunchTest):
    name = "mann-whitney"
    label = "Mann-Whitney"
    description = "one-sided Mann-Whitney U"
    min_launches = 2

    def compare(self, base: Sequence[float], new: Sequence[float], higher_is_better: bool) -> Comparison:
        (found,) = self.compare_many([Case(base, new, higher_is_better)])
        return found

    def compare_many(self, cases: Sequence[Case]) -> list[Comparison]:
        worse = worse_p_values([(c.base, c.new, c.higher_is_better) for c in cases])
        better = worse_p_values([(c.base, c.new, not c.higher_is_better) for c in cases])
        return [Comparison(w, b) for w, b in zip(worse, better)]

    def min_p(self, n_base: int, n_new: int) -> float:
        return min_p_value(n_base, n_new)

    def detectable_change(
        self, cv: float, n_base: int, n_new: int, level: float, limit: float, higher_is_better: bool
    ) -> Optional[float]:
        return launch_power.detectable_change(cv, n_base, n_new, level, limit, higher_is_better)

    def launches_to_detect(
        self, cv: float, change: float, level: float, limit: float, higher_is_better: bool
    ) -> Optional[int]:
        return launch_power.launches_to_detect(cv, change, level, limit, higher_is_better)


def worse_p_values(cases: Sequence[tuple[Sequence[float], Sequence[float], bool]]) -> list[float]:
    """One-sided Mann-Whitney U p-values (asv's test on launch values) that each case's new values are
    worse than its baseline values; a case is (base, new, higher_is_better). Exact without ties, and an
    exact permutation test (small samples enumerate every split) with them. Cases of the same sizes and
    direction go to scipy as one array: a nightly regression check runs hundreds of tests."""
    import numpy as np
    from scipy.stats import PermutationMethod, mannwhitneyu

    out: list[Optional[float]] = [None] * len(cases)
    groups: dict[tuple, list[int]] = {}
    for i, (base, new, higher) in enumerate(cases):
        alternative = "less" if higher else "greater"
        if len(set(base) | set(new)) < len(base) + len(new):  # tied values
            method = PermutationMethod(n_resamples=9999, rng=np.random.default_rng(SEED))
            out[i] = float(mannwhitneyu(new, base, alternative=alternative, method=method).pvalue)
        else:
            groups.setdefault((len(base), len(new), alternative), []).append(i)
    for (_, _, alternative), members in groups.items():
        new_values = np.array([cases[i][1] for i in members], dtype=float)
        base_values = np.array([cases[i][0] for i in members], dtype=float)
        found = np.atleast_1d(
            mannwhitneyu(new_values, base_values, alternative=alternative, method="exact", axis=1).pvalue
        )
        for i, p_value in zip(members, found):
            out[i] = float(p_value)
    return cast("list[float]", out)  # every case was filled above


def min_p_value(n_base: int, n_new: int) -> float:
    """The smallest one-sided Mann-Whitney p-value two samples of these sizes can reach: every new
    value beyond every baseline value, one split among C(n_base + n_new, n_new)."""
    return 1 / math.comb(n_base + n_new, n_new)
