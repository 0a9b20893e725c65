"""The regression check's statistics at their edges, on hand-built values: exact Mann-Whitney p-values,
Benjamini-Hochberg, the attainable p, thresholds' direction, the outcome's exit code. Each assertion is here
because a mutant of the code survived without it (``python benchmarks/mutation.py``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.errors import EXIT_INCOMPARABLE, UsageError
from harness.records.record import Record
from harness.records.samples import Samples
from harness.regression import mann_whitney, significance
from harness.regression.check import check, metric_test
from harness.regression.launch_test import Case, launches_needed
from harness.regression.mann_whitney import MannWhitney
from harness.regression.outcome import Finding, MetricTest, RegressionOutcome
from harness.regression.settings import RegressionSettings
from harness.regression.spread_rule import _iqr, metric_check
from harness.regression.thresholds import Threshold, parse_thresholds
from tests.records import launch_record

TPOT = parse_thresholds("tpot=5%")[0]

# --- significance ---------------------------------------------------------------------------------


def test_mann_whitney_p_values_are_exact_one_sided_and_in_case_order():
    cases = [
        ([1, 2, 3], [4, 5, 6], False),  # every new value worse: 1 split of C(6, 3) = 20
        ([1, 2, 2], [2, 3, 4], False),  # a tie across the sides: the permutation test, not the exact table
        ([1, 2, 3], [4, 5, 6], True),  # higher is better: these rose, so not worse at all
        ([10, 20, 30], [5, 25, 35], False),
        ([1, 2, 3, 4], [5, 6, 7, 8], False),  # another size: its own scipy call
    ]
    assert mann_whitney.worse_p_values(cases) == pytest.approx([0.05, 0.15, 1.0, 0.5, 1 / 70], rel=1e-12)
    assert mann_whitney.worse_p_values([([4, 5, 6], [1, 2, 3], True)]) == pytest.approx([0.05])
    assert mann_whitney.worse_p_values([]) == []


def test_the_smallest_attainable_p_and_the_launches_that_reach_a_p():
    assert mann_whitney.min_p_value(2, 2) == pytest.approx(1 / 6)
    assert mann_whitney.min_p_value(3, 3) == pytest.approx(0.05)
    assert mann_whitney.min_p_value(2, 3) == pytest.approx(0.1)
    assert launches_needed(MannWhitney(), 1.0) == 2
    assert launches_needed(MannWhitney(), 0.05) == 3  # reached exactly counts
    assert launches_needed(MannWhitney(), 0.0499) == 4
    assert launches_needed(MannWhitney(), 1 / 252) == 5


def test_benjamini_hochberg_adjusts_in_the_given_order():
    assert significance.fdr_adjust([0.01, 0.04, 0.03], 0.05) == pytest.approx([0.03, 0.04, 0.04])
    assert significance.fdr_adjust([0.5], 0.05) == [0.5]
    assert significance.fdr_adjust([], 0.05) == []


def test_the_ratio_interval_is_the_seeded_bootstrap_and_none_without_spread_or_scale():
    low, high = significance.ratio_interval([10, 11, 12, 13], [12, 13, 14, 15])
    assert (low, high) == pytest.approx((1.0, 1.380952380952381), rel=1e-12)
    assert significance.ratio_interval([0, 11, 12, 13], [12, 13, 14, 15]) == (None, None)
    assert significance.ratio_interval([10, 10], [12, 12]) == (None, None)
    assert significance.ratio_interval([10, 10], [12, 13]) == pytest.approx((1.2, 1.3))
    assert significance.ratio_interval([10, 11], [12, 12]) != (None, None)


# --- thresholds -----------------------------------------------------------------------------------


def test_the_change_is_relative_worsening_in_either_direction():
    lower = Threshold("tpot", "tpot_ms", 0.05)
    assert lower.change(50.0, 60.0) == pytest.approx(0.2) and lower.change(50.0, 40.0) == pytest.approx(-0.2)
    higher = Threshold("tps", "decode_tokens_per_s", 0.05, higher_is_better=True)
    assert higher.change(50.0, 40.0) == pytest.approx(0.2) and higher.change(50.0, 60.0) == pytest.approx(-0.2)


# --- the outcome ----------------------------------------------------------------------------------


def _test(change=0.2, limit=0.05, q=None, base=(10.0, 11.0), new=(12.0, 13.0, 14.0)) -> MetricTest:
    return MetricTest("demo", "p", "tpot_ms", limit, base, new, 10.0, 12.5, change, 0.1, q_value=q)


def test_a_metric_test_knows_its_launches_ratio_limit_and_significance():
    test = _test(q=0.05)
    assert test.launches == (2, 3) and test.ratio == 1.25
    assert test.beyond_limit and not _test(change=0.05).beyond_limit and _test(change=0.0501).beyond_limit
    assert test.significant(0.05) and not test.significant(0.0499) and not _test(q=None).significant(1.0)


def test_findings_read_as_one_line_each():
    assert str(Finding("demo", "p", "regression", "tpot_ms 10 -> 12")) == "FAIL demo::p: regression: tpot_ms 10 -> 12"
    assert str(Finding("demo", "p", "incomparable", "engine differs")) == "INCOMPARABLE demo::p: engine differs"


def test_the_outcome_exit_code_and_the_points_worth_morelaunch_record():
    assert RegressionOutcome().passed and RegressionOutcome().exit_code == 0
    incomparable = RegressionOutcome(incomparable=[Finding("demo", "q", "incomparable", "x")])
    assert not incomparable.passed and incomparable.exit_code == EXIT_INCOMPARABLE
    failed = RegressionOutcome(
        findings=[Finding("demo", "a", "regression", "x"), Finding("demo", "b", "missing", "y")],
        incomparable=incomparable.incomparable,
        beyond_limit=[("demo", "c"), ("demo", "a")],
    )
    assert not failed.passed and failed.exit_code == 1
    assert failed.flagged == [("demo", "a"), ("demo", "c")]  # regressed first, each once; "missing" is no regression
    assert RegressionOutcome().fdr == 0.05 and RegressionOutcome().compared == 0


# --- the one-launch rule --------------------------------------------------------------------------


def _one_launch(before, rounds=None, metric="tpot_ms") -> Record:
    samples = Samples(rounds_ms=None if rounds is None else {metric: rounds})
    return Record(scenario="demo", point_id="p", point={}, status="ok", metrics={metric: before}, samples=samples)


def test_the_interquartile_range_of_per_round_figures():
    assert _iqr([5.0]) == 0.0 and _iqr([]) == 0.0
    assert _iqr([1.0, 3.0]) == 1.0  # inclusive quartiles 1.5 and 2.5
    assert _iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0  # inclusive: 2 and 4 (exclusive would say 3)
    assert _iqr([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]) == 4.0


def test_the_one_launch_rule_needs_both_values_and_a_positive_baseline():
    assert metric_check(TPOT, _one_launch(0.0), _one_launch(60.0)) == (None, None)
    assert metric_check(TPOT, _one_launch(None), _one_launch(60.0)) == (None, None)
    assert metric_check(TPOT, _one_launch(50.0), _one_launch(None)) == (None, None)
    failure, note = metric_check(TPOT, _one_launch(1.0, []), _one_launch(2.0, []))
    assert failure == "tpot_ms 1 -> 2 (+100.0% worse; limit 5%, measured spread 0)" and note is None


def test_the_one_launch_rule_at_the_threshold_and_at_the_spread():
    assert metric_check(TPOT, _one_launch(50.0, []), _one_launch(52.5, [])) == (None, None)  # exactly 5 %: passes
    within = "demo::p: tpot_ms +20.0% is within the measured spread (10)"
    assert metric_check(TPOT, _one_launch(50.0, [40.0, 60.0]), _one_launch(60.0, [])) == (None, within)
    assert metric_check(TPOT, _one_launch(50.0, []), _one_launch(60.0, [40.0, 60.0])) == (None, within)
    failure, note = metric_check(TPOT, _one_launch(50.0, [45.0, 55.0]), _one_launch(60.0, [59.0]))
    assert failure == "tpot_ms 50 -> 60 (+20.0% worse; limit 5%, measured spread 5)" and note is None


def test_a_metric_with_one_value_per_run_says_it_had_no_spread():
    energy = parse_thresholds("energy_per_token=10%")[0]
    base, new = _one_launch(4.0, metric="energy_per_token_mj"), _one_launch(5.0, metric="energy_per_token_mj")
    assert metric_check(energy, base, new) == (
        "energy_per_token_mj 4 -> 5 (+25.0% worse; limit 10%, measured spread 0)",
        "demo::p: energy_per_token_mj has one value per run, so no spread to compare",
    )


def test_threshold_errors_name_what_is_wrong():
    with pytest.raises(UsageError, match=r"^--max-regression: 'Tpot=5%': unknown metric 'Tpot'; did you mean 'tpot'\?"):
        parse_thresholds("Tpot=5%")  # a name in capitals is a name, not a malformed entry
    with pytest.raises(UsageError) as found:
        parse_thresholds("prompt_tokens=5%")
    assert str(found.value) == (
        "--max-regression: 'prompt_tokens=5%': prompt_tokens has no better direction (prompt tokens, tokens), "
        "so it cannot regress"
    )
    with pytest.raises(UsageError, match=r"^--max-regression: no thresholds given$"):
        parse_thresholds(" , ")


def test_a_baseline_under_one_unit_still_gets_an_interval():
    low, high = significance.ratio_interval([0.5, 0.6], [0.7, 0.8])
    assert low is not None and low <= 0.75 / 0.55 <= high


# --- the check's launch-level and one-launch paths --------------------------------------------------


def test_two_launches_a_side_get_a_launch_level_test_whatever_the_unit():
    test = metric_test(MannWhitney(), TPOT, launch_record(0.5, 0.5), launch_record(0.6, 0.6))
    assert test is not None and test.launches == (2, 2) and test.change == pytest.approx(0.2)
    assert metric_test(MannWhitney(), TPOT, launch_record(0.0, 0.0), launch_record(0.6, 0.6)) is None
    assert metric_test(MannWhitney(), TPOT, launch_record(0.5), launch_record(0.6, 0.6)) is None


def test_one_launch_a_side_is_judged_by_the_spread_rule_and_recorded():
    e2e = parse_thresholds("e2e=5%")
    outcome = check([_one_launch(0.5, [], "e2e_ms")], [_one_launch(0.6, [], "e2e_ms")], RegressionSettings(e2e))
    (finding,) = outcome.findings
    assert finding.metric == "e2e_ms" and outcome.beyond_limit == [("demo", "p")]
    assert outcome.single_launch == []  # e2e_ms is no launch figure
    at_limit = check([_one_launch(50.0, [])], [_one_launch(52.5, [])], RegressionSettings([TPOT]))
    assert at_limit.findings == [] and at_limit.beyond_limit == [] and at_limit.single_launch == [("demo", "p")]
    for old, new in ((50.0, None), (None, 60.0), (0.0, 60.0)):
        quiet = check([_one_launch(old, [])], [_one_launch(new, [])], RegressionSettings([TPOT]))
        assert quiet.findings == [] and quiet.beyond_limit == [] and quiet.single_launch == []


def test_one_mann_whitney_comparison_is_a_batch_of_one_in_its_direction():
    test = MannWhitney()
    base, new = [10.0, 10.2, 9.9, 10.1], [11.0, 11.3, 11.1, 11.2]
    for higher_is_better in (False, True):
        assert test.compare(base, new, higher_is_better) == test.compare_many([Case(base, new, higher_is_better)])[0]
    slower, faster = test.compare(base, new, False), test.compare(base, new, True)
    assert slower.worse_p < 0.05 < slower.better_p and faster.better_p < 0.05 < faster.worse_p
