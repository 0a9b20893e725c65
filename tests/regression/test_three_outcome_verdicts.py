"""The regression check's three-outcome verdicts (harness.regression.verdicts) at their edges, through the
check itself (``regression.check.check`` on hand-built launches, what ``harness gate`` runs) and the printed
line of each test. Each assertion is here because a mutant survived without it
(``python benchmarks/mutation.py regression/verdicts``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.regression import verdicts
from harness.regression.check import check
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from tests.records import launch_record

TPOT = parse_thresholds("tpot=5%")[0]
SPEED = parse_thresholds("decode_tokens_per_s=5%")[0]


BASE = (10.0, 10.1, 9.9, 10.05, 9.95)


def _test(base, new, threshold=TPOT, metric="tpot_ms"):
    outcome = check(
        [launch_record(*base, metric=metric)], [launch_record(*new, metric=metric)], RegressionSettings([threshold])
    )
    (found,) = outcome.tests
    return outcome, found


def test_a_significant_worsening_past_the_limit_is_different_and_fails():
    outcome, found = _test(BASE, tuple(v * 1.2 for v in BASE))
    assert found.verdict == verdicts.DIFFERENT and outcome.exit_code == 1
    assert verdicts.line(found).startswith("DIFFERENT demo::p tpot_ms (worse): +20.0% [95% CI ")


def test_each_verdict_is_printed_with_its_change_interval_launches_and_detectable_change():
    outcome, worse = _test(BASE, tuple(v * 1.2 for v in BASE))
    assert verdicts.line(worse) == (
        "DIFFERENT demo::p tpot_ms (worse): +20.0% [95% CI +18.2%, +21.8%] (median 10 -> 12; limit 5%; "
        "5 vs 5 launches, detectable change with both sides' noise 5.5%)"
    )
    assert worse.launches_needed is None and worse.equivalence_p > 0.99
    outcome, better = _test(BASE, tuple(v * 0.8 for v in BASE))
    assert (better.verdict, outcome.exit_code) == (verdicts.DIFFERENT, 0)  # better is no failure
    assert verdicts.line(better) == (
        "DIFFERENT demo::p tpot_ms (better): -20.0% [95% CI -21.2%, -18.8%] (median 10 -> 8; limit 5%; "
        "5 vs 5 launches, detectable change with both sides' noise 5.5%)"
    )
    assert better.better_p == pytest.approx(1 / 252) and better.better_q == pytest.approx(1 / 252)
    outcome, same = _test(BASE, tuple(v * 1.001 for v in BASE))
    assert (same.verdict, outcome.exit_code, same.launches_needed) == (verdicts.SAME, 0, None)
    assert verdicts.line(same) == (
        "SAME demo::p tpot_ms: +0.1% [95% CI -1.4%, +1.6%] (median 10 -> 10.01; limit 5%; 5 vs 5 launches, "
        "detectable change with both sides' noise 5.5%)"
    )
    assert same.better_p == pytest.approx(0.7261904761904762) and same.cv == pytest.approx(0.0079060762887194)


def test_an_inconclusive_test_says_how_many_launches_would_decide_it():
    outcome, found = _test((10.0, 10.5, 9.5, 10.2, 9.8), (10.2, 10.7, 9.7, 10.4, 10.0))
    assert (found.verdict, outcome.exit_code, found.launches_needed) == (verdicts.UNKNOWN, 0, 22)
    assert verdicts.line(found) == (
        "UNKNOWN demo::p tpot_ms: +2.0% [95% CI -4.8%, +9.2%] (median 10 -> 10.2; limit 5%; 5 vs 5 launches, "
        "detectable change with both sides' noise 8.2%); inconclusive: about 22 launches a side would decide it"
    )
    outcome, blind = _test((0.0, 5.0), (0.0, 5.0))  # one positive launch a side: no CV, nothing to plan with
    assert (blind.verdict, blind.cv, blind.detectable, blind.launches_needed) == (verdicts.UNKNOWN, None, None, None)
    assert verdicts.line(blind) == (
        "UNKNOWN demo::p tpot_ms: +0.0% (median 2.5 -> 2.5; limit 5%; 2 vs 2 launches, detectable change with both sides' noise -); "
        "inconclusive: a launch measured 0 or less, which the ratio tests cannot use: re-run the point"
    )


def test_an_improvement_exactly_at_the_limit_is_not_different():
    quarter = parse_thresholds("tpot=25%")[0]
    outcome, found = _test((8.0,) * 5, (6.0,) * 5, quarter)  # -25 % exactly, significant, no spread
    assert found.change == -0.25 and found.better_q == pytest.approx(1 / 252)
    assert (found.verdict, found.equivalence_p, found.launches_needed) == (verdicts.UNKNOWN, 1.0, None)


def test_a_worse_throughput_is_different_in_its_own_direction():
    outcome, found = _test(BASE, tuple(v * 0.8 for v in BASE), SPEED, "decode_tokens_per_s")
    assert (found.verdict, outcome.exit_code) == (verdicts.DIFFERENT, 1)
    assert verdicts.line(found) == (
        "DIFFERENT demo::p decode_tokens_per_s (worse): -20.0% [95% CI -21.2%, -18.8%] (median 10 -> 8; limit 5%; "
        "5 vs 5 launches, detectable change with both sides' noise 5.5%)"
    )


def test_three_launches_a_side_reach_p_005_exactly_and_that_is_significant():
    outcome, found = _test((10.0, 10.1, 9.9), (11.0, 11.1, 10.9))
    assert (found.p_value, found.q_value) == (pytest.approx(0.05), pytest.approx(0.05))
    assert (found.verdict, outcome.exit_code) == (verdicts.DIFFERENT, 1)
    assert verdicts.line(found).endswith(
        "(median 10 -> 11; limit 5%; 3 vs 3 launches, detectable change with both sides' noise 5.8%)"
    )


def test_throughputs_detectable_change_and_launches_needed_follow_their_own_direction():
    outcome, worse = _test(BASE, tuple(v * 0.8 for v in BASE), SPEED, "decode_tokens_per_s")
    assert worse.detectable == pytest.approx(0.054681031204834134, rel=1e-9)  # tpot's is 0.0552 at this CV
    outcome, unsure = _test((9.5, 10.5), (8.5, 9.5), SPEED, "decode_tokens_per_s")  # 2 vs 2: p >= 1/6
    assert (unsure.verdict, unsure.change, unsure.launches_needed) == (verdicts.UNKNOWN, pytest.approx(0.1), 9)
    assert verdicts.line(unsure) == (
        "UNKNOWN demo::p decode_tokens_per_s: -10.0% [95% CI -19.0%, +0.0%] (median 10 -> 9; limit 5%; "
        "2 vs 2 launches, detectable change with both sides' noise -); inconclusive: about 9 launches a side would decide it"
    )


def test_an_improvement_at_q_exactly_the_fdr_is_different():
    outcome, found = _test((11.0, 11.1, 10.9), (10.0, 10.1, 9.9))
    assert found.better_q == pytest.approx(0.05) and found.verdict == verdicts.DIFFERENT
    assert verdicts.line(found).startswith("DIFFERENT demo::p tpot_ms (better): -9.1%")


def test_the_line_names_each_sides_launch_count():
    outcome, found = _test((10.0, 10.1, 9.9, 10.05), (12.0, 12.1, 11.9, 12.05, 11.95))
    assert verdicts.line(found).endswith(
        "(median 10.03 -> 12; limit 5%; 4 vs 5 launches, detectable change with both sides' noise 5.5%)"
    )


def test_an_inconclusive_test_fails_the_check_only_when_asked_and_never_hides_a_failure():
    from harness.errors import EXIT_INCONCLUSIVE

    outcome, found = _test((10.0, 10.5, 9.5, 10.2, 9.8), (10.2, 10.7, 9.7, 10.4, 10.0))
    assert found.verdict == verdicts.UNKNOWN and outcome.unknown == [found]
    assert (outcome.exit_status(), outcome.exit_status(fail_on_unknown=True)) == (0, EXIT_INCONCLUSIVE)
    outcome, found = _test(BASE, BASE)  # no change at all: the same, nothing inconclusive
    assert found.verdict == verdicts.SAME and outcome.exit_status(fail_on_unknown=True) == 0
    failing = check(
        [launch_record(*BASE), launch_record(10.0, 10.5, 9.5, 10.2, 9.8, point_id="q")],
        [launch_record(*(v * 1.2 for v in BASE)), launch_record(10.2, 10.7, 9.7, 10.4, 10.0, point_id="q")],
        RegressionSettings([TPOT]),
    )
    assert [t.verdict for t in failing.tests] == [verdicts.DIFFERENT, verdicts.UNKNOWN]
    assert failing.exit_status(fail_on_unknown=True) == 1  # the failure's code, not the inconclusive one


def test_the_change_interval_is_the_seeded_bootstraps_own_at_eight_and_twentylaunch_record():
    # the 2.5th and 97.5th percentiles of 2000 seeded resampled median ratios: the same launches give this
    # very interval on every run (at 5 launches most seeds and percentiles land on the same ratio)
    base = (9.6, 10.3, 10.2, 10.1, 10.0, 9.9, 9.8, 9.7)
    new = (9.792, 10.656, 10.504, 10.352, 10.2, 10.248, 10.096, 9.944)
    outcome, found = _test(base, new)
    assert (found.ratio_low, found.ratio_high) == (
        pytest.approx(0.9920792079207921, rel=1e-12),
        pytest.approx(1.0617463917525773, rel=1e-12),
    )
    base = tuple(round(9 + 0.1 * ((i * 7) % 20), 2) for i in range(20))
    outcome, found = _test(base, tuple(round(v * 1.02 + 0.05 * ((i * 3) % 4), 3) for i, v in enumerate(base)))
    assert (found.ratio_low, found.ratio_high) == (
        pytest.approx(0.9687915384615383, rel=1e-12),
        pytest.approx(1.0868686868686868, rel=1e-12),
    )


def test_a_side_with_a_zero_launch_has_no_equivalence_test():
    for base, new in [((0.0, 10.0, 10.1), (10.0, 10.1, 10.2)), ((10.0, 10.1, 9.9), (0.0, 10.1, 10.2))]:
        outcome, found = _test(base, new)
        assert (found.verdict, found.equivalence_p) == (verdicts.UNKNOWN, None)
        # More launches would not decide it (it said "about 2 launches a side would decide it" at 3 a side).
        assert found.launches_needed is None
        assert verdicts.line(found).endswith(
            "inconclusive: a launch measured 0 or less, which the ratio tests cannot use: re-run the point"
        )


def test_launches_without_spread_are_the_same_inside_the_limit_and_not_outside():
    outcome, inside = _test((10.0,) * 5, (10.4,) * 5)  # +4 % against a 5 % limit: the ratio is known exactly
    assert (inside.verdict, inside.equivalence_p) == (verdicts.SAME, 0.0)
    outcome, outside = _test((10.0,) * 5, (10.6,) * 5)  # +6 %
    assert (outside.verdict, outside.equivalence_p) == (verdicts.DIFFERENT, 1.0)


def test_one_side_without_spread_is_judged_by_welchs_test_not_as_a_known_ratio():
    outcome, found = _test((10.0,) * 5, (10.0, 12.0, 8.0, 13.0, 7.0))  # the first launches agree exactly
    assert found.verdict == verdicts.UNKNOWN and found.equivalence_p == pytest.approx(0.4309483972700996)


def test_the_equivalence_test_is_welchs_tost_with_two_launches_on_a_side():
    import math

    from scipy.stats import ttest_ind

    from harness.regression import significance

    bound = math.log1p(0.05)
    for base, new in [((10.0, 10.3), (10.1, 10.2, 10.15, 10.05, 10.12)), ((10.1, 10.2, 10.15, 10.05), (10.0, 10.3))]:
        log_base, log_new = [math.log(v) for v in base], [math.log(v) for v in new]
        upper = ttest_ind([v - bound for v in log_new], log_base, equal_var=False, alternative="less").pvalue
        lower = ttest_ind([v + bound for v in log_new], log_base, equal_var=False, alternative="greater").pvalue
        assert significance.equivalence_p(base, new, 0.05) == pytest.approx(max(upper, lower), rel=1e-9)
