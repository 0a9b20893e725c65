"""The regression check behind ``harness gate`` (not the correctness gate, ``harness.correctness.gate``): new
records against a baseline, point by point. Pure: no I/O, no printing.

A point fails the check when it passed (or ran) in the baseline and is now failed, timed out, skipped
or missing; when its top-k agreement verdict is ``fail``; or when a metric regressed. A point whose
agreement is ``not judged`` (too few teacher-forced positions for the KL tier) fails nothing; it is listed,
and ``--fail-on-unknown`` exits 4 on it as on an inconclusive test. With two or more
ok launches a side (``measurement.launches``) a metric regresses only when (a) the median of its launch
medians is worse than the threshold (a floor: a real but small change passes) and (b) a one-sided
Mann-Whitney U test on the launch medians (asv's test, exact) is significant with the false discovery
rate held at ``fdr`` by Benjamini-Hochberg over every launch-level test of the run, all points and
metrics. Launches are the unit: rounds of one process share its state and understate the noise.

Power is bounded by the launch counts: n vs m launches reach p >= 1 / C(n + m, n) (0.17 for 2 vs 2,
0.05 for 3 vs 3, 0.0040 for 5 vs 5, 0.0011 for 6 vs 6), and among T tests a lone regression needs
p <= fdr / T (the k-th smallest of k regressions k * fdr / T): 5 vs 5 launches flag one regression among
at most 12 tests at fdr 0.05. A change past its threshold that does not reach significance is never
passed silently: a note says why, and ``harness gate --confirm K`` reruns it.

With one launch on a side the old rule applies (beyond the threshold *and* the larger interquartile
range of the two runs' per-round figures), and a note says the point had no launch statistics.
"""

from __future__ import annotations

import statistics
from typing import Iterable, Optional

from harness.errors import UsageError
from harness.records import metrics
from harness.records.columns import excluded_launches
from harness.records.fingerprint import differences
from harness.records.record import Record, disturbed_throughout, launch_values
from harness.records.store import timing_records
from harness.regression import significance, verdicts
from harness.regression.outcome import (
    Finding,
    MetricTest,
    Point,
    RegressionOutcome,
    VerdictChange,
)
from harness.regression.spread_rule import metric_check
from harness.regression.thresholds import DEFAULT_FDR, Threshold


def key(record: Record) -> Point:
    return record.scenario, record.point_id


def index(records: Iterable[Record], label: str) -> dict[Point, Record]:
    """Records by (scenario, point id); the same point twice is an error (merge runners' records first). A
    point with a run record and a gate-only one (``harness verify``) is its run record (``timing_view``)."""
    out: dict[Point, Record] = {}
    for record in timing_records(records):
        if key(record) in out:
            raise UsageError(
                f"{label}: point {record.scenario}::{record.point_id} appears twice; "
                "combine records from several runners with `harness merge` first"
            )
        out[key(record)] = record
    return out


def launch_test(threshold: Threshold, base: Record, new: Record) -> Optional[MetricTest]:
    """The launch-level test of one metric (its p-value still to come, see ``_decide``), or None when a
    side has fewer than two ok launches with it."""
    before_values = launch_values(base, threshold.metric)
    after_values = launch_values(new, threshold.metric)
    if len(before_values) < 2 or len(after_values) < 2:
        return None
    before, after = statistics.median(before_values), statistics.median(after_values)
    if before <= 0:
        return None
    return MetricTest(
        base.scenario,
        base.point_id,
        threshold.metric,
        threshold.limit,
        tuple(before_values),
        tuple(after_values),
        before,
        after,
        threshold.change(before, after),
        significance.min_p_value(len(before_values), len(after_values)),
        higher_is_better=threshold.higher_is_better,
    )


def _scenarios(points) -> str:
    return ", ".join(sorted({scenario for scenario, _ in points})) or "none"


def _refuse_nothing_to_compare(base: dict, now: dict, scope: Optional[set[Point]]) -> None:
    """A check that compared nothing has not passed: an empty baseline, or one that shares no point with
    the new records (another scenario's baseline, a deselected run), is a usage error."""
    if not base:
        raise UsageError(
            "the baseline holds no records, so nothing can be compared; save one from a "
            "complete run with `harness baseline save`"
        )
    common = set(base) & set(now)
    if scope is not None:
        common &= scope
    if not common:
        raise UsageError(
            f"the baseline has no records in common with the results, so nothing can be "
            f"compared (baseline: {len(base)} point(s) of scenarios {_scenarios(base)}; "
            f"results: {len(now)} point(s) of scenarios {_scenarios(now)})"
        )


def check(
    baseline: Iterable[Record],
    new: Iterable[Record],
    thresholds: list[Threshold],
    scope: Optional[set[Point]] = None,
    fdr: float = DEFAULT_FDR,
    accept: frozenset[str] = frozenset(),
) -> RegressionOutcome:
    """Check ``new`` against ``baseline``. ``scope`` limits which baseline points must be present
    (pytest passes the points it selected; the command line checks all of them); ``fdr`` is the false
    discovery rate over the run's launch-level tests. A point whose fingerprint differs from its baseline's
    (``harness.records.fingerprint``) in a field not in ``accept`` is incomparable: its figures are not
    judged, its failures and agreement still are."""
    base, now = index(baseline, "baseline"), index(new, "new records")
    _refuse_nothing_to_compare(base, now, scope)
    outcome = RegressionOutcome(fdr=fdr)
    correctness_only: list[str] = []  # a side is a gate-only record (harness verify): no figures to compare
    for point, record in now.items():
        scenario, pid = point
        if record.status in ("failed", "timeout"):
            if point in base and base[point].status in ("failed", "timeout"):
                outcome.notes.append(f"{scenario}::{pid}: still {record.status}, as in the baseline")
                continue
            outcome.findings.append(Finding(scenario, pid, "failed", f"{record.status}: {record.reason}"))
            continue
        if record.verdict == "fail" and record.correctness is not None:  # a verdict comes with its part
            reasons = "; ".join(record.correctness.reasons) or "see the record"
            outcome.findings.append(
                Finding(scenario, pid, "agreement", f"top-{record.correctness.k} agreement fails: {reasons}")
            )
        if record.not_judged and record.correctness is not None:  # neither pass nor fail: exit 4 on request
            why = "; ".join(record.correctness.reasons) or "see the record"
            outcome.not_judged.append(Finding(scenario, pid, "not judged", f"correctness: {why}"))
        if record.accuracy is not None and record.accuracy.verdict == "fail":  # a failed non-inferiority margin
            failed = ", ".join(record.accuracy.failed_margins()) or "see the record's accuracy part"
            outcome.findings.append(Finding(scenario, pid, "accuracy", f"non-inferiority margin fails: {failed}"))
    for point, before in base.items():
        scenario, pid = point
        if scope is not None and point not in scope:
            continue
        after = now.get(point)
        if before.status != "ok":
            continue  # nothing to lose: it did not run in the baseline
        if after is None:
            outcome.findings.append(Finding(scenario, pid, "missing", "ran in the baseline, no record now"))
            continue
        if after.status == "skipped":
            outcome.findings.append(
                Finding(scenario, pid, "skipped", f"ran in the baseline, skipped now: {after.reason}")
            )
            continue
        if after.status != "ok":
            continue  # already reported above
        if before.verdict and after.verdict and before.verdict != after.verdict:  # judged whatever the fingerprint
            outcome.verdict_changes.append(VerdictChange(scenario, pid, before.verdict, after.verdict))
        differ = differences(before, after, accept)
        if differ:
            accepted = ",".join(d.field for d in differ)
            outcome.incomparable.append(
                Finding(
                    scenario,
                    pid,
                    "incomparable",
                    f"{'; '.join(map(str, differ))} (baseline -> new); figures not judged — rerun the baseline "
                    f"here, or pass --accept-difference {accepted} to compare anyway",
                )
            )
            continue
        outcome.compared += 1
        if before.gate_only or after.gate_only:
            correctness_only.append(f"{scenario}::{pid}")
        outcome.notes += [  # kept in the records, left out of the test (records.record.launch_values)
            f"{scenario}::{pid}: {side} {text}"
            for side, record in (("baseline", before), ("new", after))
            for text in excluded_launches(record)
        ]
        outcome.notes += [
            f"{scenario}::{pid}: {side}: under two undisturbed launches, so the significance test counts the "
            "disturbed ones too; its figures may be the machine's, not the build's — rerun on a quiet machine"
            for side, record in (("baseline", before), ("new", after))
            if disturbed_throughout(record)
        ]
        if before.verdict == "pass" and after.verdict == "drift":
            outcome.notes.append(f"{scenario}::{pid}: agreement went from pass to drift")
        for threshold in thresholds:
            _judge(outcome, threshold, before, after)
    if correctness_only:
        outcome.notes.append(
            f"{len(correctness_only)} point(s) compared on correctness only, a side being a gate-only record "
            f"(harness verify: no timing): {', '.join(correctness_only[:5])}"
            + (f" and {len(correctness_only) - 5} more" if len(correctness_only) > 5 else "")
        )
    _decide(outcome)
    return outcome


def _judge(outcome: RegressionOutcome, threshold: Threshold, before: Record, after: Record) -> None:
    test = launch_test(threshold, before, after)
    if test is not None:
        outcome.tests.append(test)
        return
    point = key(before)
    old, new = before.metrics.get(threshold.metric), after.metrics.get(threshold.metric)
    if old is None or new is None or old <= 0:
        return
    if threshold.metric in metrics.LAUNCH and point not in outcome.single_launch:
        outcome.single_launch.append(point)
    failure, note = metric_check(threshold, before, after)
    if threshold.change(old, new) > threshold.limit:
        outcome.beyond_limit.append(point)
    if failure:
        outcome.findings.append(Finding(*point, "regression", failure, metric=threshold.metric))
    if note:
        outcome.notes.append(note)


def _decide(outcome: RegressionOutcome) -> None:
    """Benjamini-Hochberg over every launch-level test, then findings and notes."""
    fdr, tests = outcome.fdr, outcome.tests
    for test, p_value in zip(
        tests, significance.worse_p_values([(t.base_values, t.new_values, t.higher_is_better) for t in tests])
    ):
        test.p_value = p_value
    p_values = [t.p_value for t in tests if t.p_value is not None]  # each test got its p just above
    for test, q_value in zip(tests, significance.fdr_adjust(p_values, fdr)):
        test.q_value = q_value
    verdicts.decide(outcome)  # different | same | unknown, each with its interval and detectable change
    lone = fdr / len(tests) if tests else 0.0  # the p a lone regression among them needs
    for test in tests:
        if not test.beyond_limit:
            continue
        point = (test.scenario, test.point_id)
        outcome.beyond_limit.append(point)
        name = f"{test.scenario}::{test.point_id}: {test.metric} {test.change:+.1%} worse (limit {test.limit:.0%})"
        if test.significant(fdr):
            outcome.findings.append(Finding(*point, "regression", _message(test), metric=test.metric, test=test))
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
            f"launch-level test of {len(tests)} metric(s): one-sided Mann-Whitney U, Benjamini-Hochberg FDR {fdr:g}"
        )
        weakest = max(tests, key=lambda t: t.min_p)
        if weakest.min_p > lone:
            outcome.notes.append(
                f"power: {_power(weakest.launches, len(tests), fdr)}, so only regressions "
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


def _power(launches: tuple[int, int], tests: int, fdr: float) -> str:
    lone = fdr / tests
    return (
        f"with {launches[0]} vs {launches[1]} launches the smallest attainable p is "
        f"{significance.min_p_value(*launches):.2g}, and {tests} test(s) at FDR {fdr:g} need p <= {lone:.2g} for a lone "
        f"regression ({significance.launches_needed(lone)} launches a side would do)"
    )


def _message(test: MetricTest) -> str:
    interval = "" if test.ratio_low is None else f" [95% CI {test.ratio_low:.3f}, {test.ratio_high:.3f}]"
    return (
        f"{test.metric} {test.before:.4g} -> {test.after:.4g} ({test.change:+.1%} worse; limit {test.limit:.0%}; "
        f"{test.launches[0]} vs {test.launches[1]} launches, Mann-Whitney p={test.p_value:.2g}, "
        f"q={test.q_value:.2g}; ratio {test.ratio:.3f}{interval})"
    )
