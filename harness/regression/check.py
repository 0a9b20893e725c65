"""The regression check behind ``harness gate`` (not the correctness gate, ``harness.correctness.gate``): new
records against a baseline, point by point, under ``RegressionSettings``. Pure: no I/O, no printing. Both front
ends reach it through ``harness.regression.entry.run_check``.

A point fails the check when it passed (or ran) in the baseline and is now failed, timed out, skipped
or missing; when its top-k agreement verdict is ``fail``; or when a metric regressed. A point whose
agreement is ``not judged`` (too few teacher-forced positions for the KL tier) fails nothing; it is listed,
and ``--fail-on-unknown`` exits 4 on it as on an inconclusive test. With as many ok launches a side
(``measurement.launches``) as the launch test needs (two for the default) a metric regresses only when (a)
the median of its launch medians is worse than the threshold (a floor: a real but small change passes) and
(b) the launch test (``harness.regression.launch_test``; by default a one-sided Mann-Whitney U test on the
launch medians, asv's test, exact) is significant with the false discovery rate held at ``fdr`` by
Benjamini-Hochberg over every launch-level test of the run, all points and metrics
(``harness.regression.launch_findings``). Launches are the unit: rounds of one process share its state and
understate the noise.

Power is bounded by the launch counts: with Mann-Whitney n vs m launches reach p >= 1 / C(n + m, n) (0.17 for 2 vs 2,
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
from harness.records.fingerprint import differences
from harness.records.record import KnownFailure, Record, launch_values
from harness.records.store import timing_records
from harness.records.verdict import FAILED, failure_line
from harness.regression import launch_findings
from harness.regression.disturbed_notes import DisturbedNotes
from harness.regression.launch_test import LaunchTest
from harness.regression.launch_test import get as get_launch_test
from harness.regression.outcome import Finding, MetricTest, Point, RegressionOutcome, VerdictChange
from harness.regression.settings import RegressionSettings
from harness.regression.spread_rule import metric_check
from harness.regression.thresholds import Threshold


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


def metric_test(test: LaunchTest, threshold: Threshold, base: Record, new: Record) -> Optional[MetricTest]:
    """The launch-level test of one metric (its p-value still to come, see ``launch_findings.decide``), or
    None when a side has fewer ok launches with it than the launch test needs."""
    before_values = launch_values(base, threshold.metric)
    after_values = launch_values(new, threshold.metric)
    if len(before_values) < test.min_launches or len(after_values) < test.min_launches:
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
        test.min_p(len(before_values), len(after_values)),
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
    settings: RegressionSettings,
    scope: Optional[set[Point]] = None,
) -> RegressionOutcome:
    """Check ``new`` against ``baseline`` with ``settings`` (thresholds, the false discovery rate over the
    run's launch-level tests, the launch test, the accepted differences). ``scope`` limits which baseline
    points must be present (pytest passes the points it selected; the command line checks all of them). A
    point whose fingerprint differs from its baseline's (``harness.records.fingerprint``) in a field not in
    ``settings.accept`` is incomparable: its figures are not judged, its failures and agreement still are."""
    test = get_launch_test(settings.launch_test)
    base, now = index(baseline, "baseline"), index(new, "new records")
    _refuse_nothing_to_compare(base, now, scope)
    outcome = RegressionOutcome(fdr=settings.fdr)
    disturbed = DisturbedNotes()  # one note for every point's disturbed launches, not one per launch
    correctness_only: list[str] = []  # a side is a gate-only record (harness verify): no figures to compare
    for point, record in now.items():
        scenario, pid = point
        if record.known_failure is not None and _known(outcome, record, record.known_failure):
            continue
        if record.status in ("failed", "timeout"):
            if point in base and base[point].status in ("failed", "timeout"):
                outcome.notes.append(f"{scenario}::{pid}: still {record.status}, as in the baseline")
                continue
            outcome.findings.append(Finding(scenario, pid, "failed", f"{record.status}: {record.reason}"))
            continue
        if record.verdict == "fail" and record.correctness is not None:  # a verdict comes with its part
            reasons = "; ".join(record.correctness.reasons) or "see the record"
            label = record.correctness.failure_label()  # the rule that failed, not always top-k agreement
            outcome.findings.append(Finding(scenario, pid, "correctness", f"{label} fails: {reasons}"))
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
        differ = differences(before, after, settings.accept)
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
        if before.correctness_only or after.correctness_only:
            correctness_only.append(f"{scenario}::{pid}")
        disturbed.add(scenario, pid, before, after)
        if before.verdict == "pass" and after.verdict == "drift":
            outcome.notes.append(f"{scenario}::{pid}: agreement went from pass to drift")
        for threshold in settings.thresholds:
            _judge(outcome, test, threshold, before, after)
    outcome.notes += disturbed.notes()
    if correctness_only:
        outcome.notes.append(
            f"{len(correctness_only)} point(s) compared on correctness only, a side being a gate-only record "
            f"(harness verify: no timing): {', '.join(correctness_only[:5])}"
            + (f" and {len(correctness_only) - 5} more" if len(correctness_only) > 5 else "")
        )
    launch_findings.decide(outcome, test)
    return outcome


def _known(outcome: RegressionOutcome, record: Record, known: KnownFailure) -> bool:
    """A point the scenario lists as a known failure (``record.known_failure``), judged as the run's verdict
    judges it (``harness.records.verdict``): its failure is a KNOWN FAILURE line, not a finding; once it
    passes it is FIXED, a finding when ``strict`` (pytest's strict XPASS). True when its failure is told
    here (its figures are still compared below); False when it passed (its checks run as any point's)."""
    scenario, pid = record.scenario, record.point_id
    if record.status in FAILED or record.verdict_failed:
        why = failure_line(record)
        outcome.known.append(Finding(scenario, pid, "known failure", f"{why} (expected: {known.reason})"))
        return True
    if record.known_failure_fixed:
        fixed = f"known failure now passes: {known.reason}"
        if known.strict:
            outcome.findings.append(
                Finding(scenario, pid, "fixed (strict)", f"{fixed}; remove it from the scenario's known_failures")
            )
        else:
            outcome.fixed.append(Finding(scenario, pid, "fixed", fixed))
    return False


def _judge(outcome: RegressionOutcome, test: LaunchTest, threshold: Threshold, before: Record, after: Record) -> None:
    found = metric_test(test, threshold, before, after)
    if found is not None:
        outcome.tests.append(found)
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
