"""Three-outcome verdicts of the regression check's launch-level tests, as Chromium Pinpoint gives them:

- **different**: significant after Benjamini-Hochberg (the run's launch test, ``harness.regression.launch_test``:
  one-sided Mann-Whitney U by default, in the worse or the better direction) *and* the change of the medians
  past the threshold. Worse fails the check.
- **same**: the two one-sided tests (TOST, Welch, on log launch values) show the ratio of the two sides
  within ``1 / (1 + limit) .. 1 + limit`` at 5 % each: the change is smaller than the threshold.
- **unknown**: neither; inconclusive. The test says how many launches a side would decide it.

Each test also gets the change's 95 % bootstrap interval of the ratio of medians and the minimum detectable
change at its launches (the launch test's; Mann-Whitney's from ``harness.regression.launch_power``). Pure: no I/O.
"""

from __future__ import annotations

from typing import Optional

from harness.regression import launch_power, significance
from harness.regression.launch_test import LaunchTest
from harness.regression.outcome import MetricTest, RegressionOutcome

DIFFERENT, SAME, UNKNOWN = "different", "same", "unknown"


def decide(outcome: RegressionOutcome, launch_test: LaunchTest) -> None:
    """Fill every launch-level test's verdict, interval, detectable change and (unknown) launches needed.
    Both directions' p-values and the worse direction's q-values are already there
    (``launch_findings.decide``)."""
    tests, fdr = outcome.tests, outcome.fdr
    if not tests:
        return
    better = [t.better_p for t in tests if t.better_p is not None]  # every test got both p-values
    for test, q_value in zip(tests, significance.fdr_adjust(better, fdr)):
        test.better_q = q_value
    level = launch_power.alpha(fdr, len(tests))
    for test in tests:
        _judge(test, launch_test, fdr, level)


def _judge(test: MetricTest, launch_test: LaunchTest, fdr: float, level: float) -> None:
    if test.ratio_low is None:
        test.ratio_low, test.ratio_high = significance.ratio_interval(test.base_values, test.new_values)
    test.equivalence_p = significance.equivalence_p(test.base_values, test.new_values, test.limit)
    test.cv = launch_power.pooled_cv(test.base_values, test.new_values)
    if test.cv is not None:
        test.detectable = launch_test.detectable_change(
            test.cv, *test.launches, level, test.limit, test.higher_is_better
        )
    worse = test.significant(fdr) and test.beyond_limit
    improved = test.better_q is not None and test.better_q <= fdr and -test.change > test.limit
    if worse or improved:
        test.verdict = DIFFERENT
    elif test.equivalence_p is not None and test.equivalence_p <= significance.EQUIVALENCE_ALPHA:
        test.verdict = SAME
    else:
        test.verdict = UNKNOWN
        if min(test.base_values + test.new_values) > 0:  # more launches cannot fix a zero
            test.launches_needed = _needed(test, launch_test, level)


def _needed(test: MetricTest, launch_test: LaunchTest, level: float) -> Optional[int]:
    """Launches a side that would decide an inconclusive test: enough to detect the observed change when it
    is past the threshold, enough to show it the same when it is inside."""
    if test.cv is None:
        return None
    if abs(test.change) > test.limit:
        return launch_test.launches_to_detect(test.cv, abs(test.change), level, test.limit, test.higher_is_better)
    return launch_power.launches_to_show_same(test.cv, test.change, test.limit)


def line(test: MetricTest) -> str:
    """One printed line per test: the verdict word, the change with its interval, what it rests on."""
    word = test.verdict.upper() if test.verdict else "-"
    direction = ""
    if test.verdict == DIFFERENT:
        direction = " (worse)" if test.change > 0 else " (better)"
    interval = ""
    if test.ratio_low is not None and test.ratio_high is not None:
        interval = f" [95% CI {test.ratio_low - 1:+.1%}, {test.ratio_high - 1:+.1%}]"
    detectable = "-" if test.detectable is None else f"{test.detectable:.1%}"
    text = (
        f"{word} {test.name}{direction}: {test.ratio - 1:+.1%}{interval} (median {test.before:.4g} -> "
        f"{test.after:.4g}; limit {test.limit:.0%}; {test.launches[0]} vs {test.launches[1]} launches, "
        f"detectable change with both sides' noise {detectable})"
    )
    if test.verdict == UNKNOWN:
        more = (
            "a launch measured 0 or less, which the ratio tests cannot use: re-run the point"
            if min(test.base_values + test.new_values) <= 0
            else f"about {test.launches_needed} launches a side would decide it"
            if test.launches_needed is not None
            else f"over {launch_power.MOST_LAUNCHES} launches a side would be needed: widen the limit"
        )
        text += f"; inconclusive: {more}"
    return text
