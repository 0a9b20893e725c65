"""The regression check's statistics at their edges, on hand-built values: exact Mann-Whitney p-values,
Benjamini-Hochberg, the attainable p, thresholds' direction, the outcome's exit code. Each assertion is here
because a mutant of the code survived without it (``python benchmarks/mutation.py``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.errors import EXIT_INCOMPARABLE
from harness.regression import significance
from harness.regression.outcome import Finding, MetricTest, RegressionOutcome
from harness.regression.thresholds import Threshold

# --- significance ---------------------------------------------------------------------------------


def test_mann_whitney_p_values_are_exact_one_sided_and_in_case_order():
    cases = [
        ([1, 2, 3], [4, 5, 6], False),  # every new value worse: 1 split of C(6, 3) = 20
        ([1, 2, 2], [2, 3, 4], False),  # a tie across the sides: the permutation test, not the exact table
        ([1, 2, 3], [4, 5, 6], True),  # higher is better: these rose, so not worse at all
        ([10, 20, 30], [5, 25, 35], False),
        ([1, 2, 3, 4], [5, 6, 7, 8], False),  # another size: its own scipy call
    ]
    assert significance.worse_p_values(cases) == pytest.approx([0.05, 0.15, 1.0, 0.5, 1 / 70], rel=1e-12)
    assert significance.worse_p_values([([4, 5, 6], [1, 2, 3], True)]) == pytest.approx([0.05])
    assert significance.worse_p_values([]) == []


def test_the_smallest_attainable_p_and_the_launches_that_reach_a_p():
    assert significance.min_p_value(2, 2) == pytest.approx(1 / 6)
    assert significance.min_p_value(3, 3) == pytest.approx(0.05)
    assert significance.min_p_value(2, 3) == pytest.approx(0.1)
    assert significance.launches_needed(1.0) == 2
    assert significance.launches_needed(0.05) == 3  # reached exactly counts
    assert significance.launches_needed(0.0499) == 4
    assert significance.launches_needed(1 / 252) == 5


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


def test_the_outcome_exit_code_and_the_points_worth_more_launches():
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
