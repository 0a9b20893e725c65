"""The detectable-change simulation and the variance components (issue 30), against independent checks:
scipy's exact Mann-Whitney test, a direct simulation through the regression check's own test, and
synthetic launches with known components."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from harness.measure import noise
from harness.regression import launch_power, mann_whitney, significance


@pytest.mark.parametrize("n_base,n_new", [(4, 4), (5, 5), (4, 6), (8, 8)])
def test_the_critical_u_is_where_scipys_exact_p_crosses_the_level(n_base, n_new):
    level = 0.025
    u = launch_power.critical_u(n_base, n_new, level)
    base = list(range(n_base))

    def p_of(target: int) -> float:  # a new sample with exactly ``target`` pairs above the baseline
        new, left = [], target
        for _ in range(n_new):
            k = min(left, n_base)
            new.append(k - 0.5)
            left -= k
        return float(mannwhitneyu(new, base, alternative="greater", method="exact").pvalue)

    assert p_of(u) <= level < p_of(u - 1)


def test_3_vs_3_launches_can_never_reach_a_strict_level():
    assert launch_power.critical_u(3, 3, 0.025) is None  # 1 / C(6, 3) = 0.05
    assert launch_power.detectable_change(0.01, 3, 3, 0.025, 0.05) is None


def test_the_detectable_change_matches_a_direct_simulation_of_the_check():
    """Nights drawn apart from the module's random numbers, judged by the check's own p-values: the share
    called different at the reported change is about 80 %."""
    cv, n, level, limit = 0.04, 5, 0.025, 0.05
    change = launch_power.detectable_change(cv, n, n, level, limit)
    assert limit < change < 0.3
    rng = np.random.default_rng(123)
    sigma = np.sqrt(np.log1p(cv * cv))
    cases, beyond = [], []
    for _ in range(1500):
        base = np.exp(sigma * rng.standard_normal(n))
        new = (1 + change) * np.exp(sigma * rng.standard_normal(n))
        cases.append((list(base), list(new), False))
        beyond.append(np.median(new) / np.median(base) - 1 > limit)
    p_values = mann_whitney.worse_p_values(cases)
    rate = np.mean([p <= level and b for p, b in zip(p_values, beyond)])
    assert rate == pytest.approx(launch_power.POWER, abs=0.04)


def test_more_launches_and_less_noise_detect_smaller_changes_never_below_the_threshold():
    level, limit = 0.025, 0.05
    by_launches = [launch_power.detectable_change(0.05, n, n, level, limit) for n in (5, 8, 12)]
    assert by_launches == sorted(by_launches, reverse=True)
    by_noise = [launch_power.detectable_change(cv, 5, 5, level, limit) for cv in (0.01, 0.05, 0.2)]
    assert by_noise == sorted(by_noise) and by_noise[0] > limit
    assert launch_power.detectable_change(0.05, 5, 5, level, limit, higher_is_better=True) > limit


def test_launches_to_detect_and_to_show_same_shrink_with_the_noise():
    assert launch_power.launches_to_detect(0.02, 0.10, 0.025, 0.05, False) < launch_power.launches_to_detect(
        0.05, 0.10, 0.025, 0.05, False
    )
    assert launch_power.launches_to_show_same(0.01, 0.0, 0.05) < launch_power.launches_to_show_same(0.04, 0.0, 0.05)
    assert launch_power.launches_to_show_same(0.04, 0.06, 0.05) is None  # outside the bounds: never the same


def test_variance_components_recover_known_between_and_within_parts():
    rng = np.random.default_rng(7)
    between, within, rounds = 0.03, 0.05, 20
    groups = [
        list(100 * (1 + between * rng.standard_normal()) + 100 * within * rng.standard_normal(rounds))
        for _ in range(400)
    ]
    found_within, found_between = noise.components(groups)
    assert found_within == pytest.approx(within, rel=0.05)
    assert found_between == pytest.approx(between, rel=0.1)
    assert noise.launch_cv(between, within, rounds) == pytest.approx((between**2 + within**2 / rounds) ** 0.5)


def test_one_launch_has_a_within_part_only_and_no_rounds_have_neither():
    assert noise.components([[1.0, 1.1, 0.9]])[1] is None and noise.components([[1.0, 1.1, 0.9]])[0] > 0
    assert noise.components([]) == (None, None)


def test_the_equivalence_test_is_scipys_welch_tost():
    import math

    from scipy.stats import ttest_ind

    rng = np.random.default_rng(3)
    for _ in range(5):
        base, new = np.exp(rng.normal(0, 0.05, 5)), np.exp(rng.normal(0.01, 0.08, 6))
        bound = math.log1p(0.05)
        upper = ttest_ind(np.log(new) - bound, np.log(base), equal_var=False, alternative="less").pvalue
        lower = ttest_ind(np.log(new) + bound, np.log(base), equal_var=False, alternative="greater").pvalue
        assert significance.equivalence_p(list(base), list(new), 0.05) == pytest.approx(max(upper, lower), rel=1e-9)
