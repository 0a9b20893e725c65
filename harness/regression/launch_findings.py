"""From the run's launch-level tests to the regression check's findings and notes: the launch test's
p-values (``harness.regression.launch_test``), Benjamini-Hochberg over every test of the run, the
three-outcome verdicts (``harness.regression.verdicts``), and a note for each change past its threshold that
did not reach significance, saying whether more launches could show it. Pure: no I/O."""

from __future__ import annotations

from harness.regression import significance, verdicts
from harness.regression.launch_test import Case, LaunchTest, launches_needed
from harness.regression.outcome import Finding, MetricTest, RegressionOutcome


def decide(outcome: RegressionOutcome, launch_test: LaunchTest) -> None:
    """The launch test's p-values for every launch-level test of the run, Benjamini-Hochberg over them, the
    three-outcome verdicts, then findings and notes."""
    fdr, tests = outcome.fdr, outcome.tests
    found = launch_test.compare_many([Case(t.base_values, t.new_values, t.higher_is_better) for t in tests])
    for test, comparison in zip(tests, found):
        test.p_value, test.better_p = comparison.worse_p, comparison.better_p
    p_values = [t.p_value for t in tests if t.p_value is not None]  # each test got its p just above
    for test, q_value in zip(tests, significance.fdr_adjust(p_values, fdr)):
        test.q_value = q_value
    verdicts.decide(outcome, launch_test)  # different | same | unknown, with interval and detectable change
    lone = fdr / len(tests) if tests else 0.0  # the p a lone regression among them needs
    for test in tests:
        if not test.beyond_limit:
            continue
        point = (test.scenario, test.point_id)
        outcome.beyond_limit.append(point)
        name = f"{test.scenario}::{test.point_id}: {test.metric} {test.change:+.1%} worse (limit {test.limit:.0%})"
        if test.significant(fdr):
            message = _message(test, launch_test.label)
            outcome.findings.append(Finding(*point, "regression", message, metric=test.metric, test=test))
        elif test.min_p > lone:
            outcome.notes.append(
                f"{name} but too few launches to show it ({test.launches[0]} vs {test.launches[1]} "
                f"launches reach p >= {test.min_p:.2g}; a lone regression among {len(tests)} tests "
                f"needs p <= {lone:.2g}); rerun it with more launches (measurement.launches) or "
                "`harness gate --confirm K`"
            )
        else:
            outcome.notes.append(
                f"{name} but not significant over {test.launches[0]} vs {test.launches[1]} "
                f"launches (p={test.p_value:.2g}, q={test.q_value:.2g} > {fdr:g}): within "
                "launch-to-launch noise"
            )
    if tests:
        outcome.notes.append(
            f"launch-level test of {len(tests)} metric(s): {launch_test.description}, Benjamini-Hochberg FDR {fdr:g}"
        )
        weakest = max(tests, key=lambda t: t.min_p)
        if weakest.min_p > lone:
            outcome.notes.append(
                f"power: {_power(launch_test, weakest.launches, len(tests), fdr)}, so only regressions "
                "shared by several points can show"
            )
    if outcome.single_launch:
        names = ", ".join(f"{s}::{p}" for s, p in outcome.single_launch[:5])
        more = f" and {len(outcome.single_launch) - 5} more" if len(outcome.single_launch) > 5 else ""
        outcome.notes.append(
            f"{len(outcome.single_launch)} point(s) judged without launch statistics (under two "
            f"launches measured a metric on a side): {names}{more}; threshold and per-round spread only, which "
            "launch-to-launch noise can trip; set measurement.launches: 5 (baseline and new run) "
            "for a launch-level test"
        )


def _power(launch_test: LaunchTest, launches: tuple[int, int], tests: int, fdr: float) -> str:
    lone = fdr / tests
    return (
        f"with {launches[0]} vs {launches[1]} launches the smallest attainable p is "
        f"{launch_test.min_p(*launches):.2g}, and {tests} test(s) at FDR {fdr:g} need p <= {lone:.2g} for a lone "
        f"regression ({launches_needed(launch_test, lone)} launches a side would do)"
    )


def _message(test: MetricTest, label: str) -> str:
    interval = "" if test.ratio_low is None else f" [95% CI {test.ratio_low:.3f}, {test.ratio_high:.3f}]"
    return (
        f"{test.metric} {test.before:.4g} -> {test.after:.4g} ({test.change:+.1%} worse; limit {test.limit:.0%}; "
        f"{test.launches[0]} vs {test.launches[1]} launches, {label} p={test.p_value:.2g}, "
        f"q={test.q_value:.2g}; ratio {test.ratio:.3f}{interval})"
    )
