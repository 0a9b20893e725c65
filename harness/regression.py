"""The regression check behind ``harness gate`` (not the correctness gate, ``harness.gate``): new
records against a baseline, point by point. Pure: no I/O, no printing.

A point fails the gate when it passed (or ran) in the baseline and is now failed, timed out, skipped
or missing; when its top-k agreement verdict is ``fail``; or when a metric regressed beyond its
threshold *and* by more than the measured spread (the larger interquartile range of the two runs'
per-round figures), so run-to-run noise alone never trips it.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional

from harness import metrics
from harness.errors import UsageError
from harness.results import Record, round_values

DEFAULT_THRESHOLDS = "tpot=5%,ttft=10%,energy_per_token=10%"


@dataclass(frozen=True)
class Threshold:
    name: str  # as the user typed it
    metric: str
    limit: float  # allowed relative worsening, 0.05 = 5 %
    higher_is_better: bool = False


def parse_thresholds(text: str) -> list[Threshold]:
    """``tpot=5%,ttft=10%`` -> thresholds. Any catalogued metric with a direction works as a name (see
    ``harness.metrics``); bad entries are quoted back."""
    out = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9]*\.?[0-9]+)\s*(%?)", entry)
        if not match:
            raise UsageError(f"--max-regression: {entry!r}: expected NAME=PERCENT, e.g. tpot=5%")
        name, number, percent = match.groups()
        try:
            metric = metrics.resolve(name)
        except UsageError as exc:
            raise UsageError(f"--max-regression: {entry!r}: {exc}") from None
        if metric.higher_is_better is None:
            raise UsageError(f"--max-regression: {entry!r}: {metric.name} has no better direction "
                             f"({metric.label or metric.name}, {metric.unit}), so it cannot regress")
        out.append(Threshold(name, metric.name, float(number) / 100 if percent else float(number),
                             metric.higher_is_better))
    if not out:
        raise UsageError("--max-regression: no thresholds given")
    return out


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


@dataclass
class Finding:
    scenario: str
    point_id: str
    kind: str  # missing | failed | skipped | agreement | regression
    message: str

    def __str__(self) -> str:
        return f"FAIL {self.scenario}::{self.point_id}: {self.kind}: {self.message}"


@dataclass
class GateOutcome:
    findings: list[Finding] = field(default_factory=list)
    compared: int = 0  # points present in both runs
    notes: list[str] = field(default_factory=list)  # things checked with less than full information

    @property
    def passed(self) -> bool:
        return not self.findings


def key(record: Record) -> tuple[str, str]:
    return record.scenario, record.point_id


def index(records: Iterable[Record], label: str) -> dict[tuple[str, str], Record]:
    """Records by (scenario, point id); the same point twice is an error (merge runners' records first)."""
    out: dict[tuple[str, str], Record] = {}
    for record in records:
        if key(record) in out:
            raise UsageError(f"{label}: point {record.scenario}::{record.point_id} appears twice; "
                             "combine records from several runners with `harness merge` first")
        out[key(record)] = record
    return out


def metric_check(threshold: Threshold, base: Record, new: Record) -> tuple[Optional[str], Optional[str]]:
    """(failure message, note) for one metric of one point."""
    before, after = base.metrics.get(threshold.metric), new.metrics.get(threshold.metric)
    if before is None or after is None or before <= 0:
        return None, None
    worse = (before - after) if threshold.higher_is_better else (after - before)
    relative = worse / before
    if relative <= threshold.limit:
        return None, None
    spread = max(_iqr(round_values(base).get(threshold.metric, [])), _iqr(round_values(new).get(threshold.metric, [])))
    note = None
    if threshold.metric not in round_values(base):
        note = f"{base.scenario}::{base.point_id}: {threshold.metric} has one value per run, so no spread to compare"
    if worse <= spread:
        return None, (f"{base.scenario}::{base.point_id}: {threshold.metric} {relative:+.1%} is within the measured "
                      f"spread ({spread:.3g})")
    return (f"{threshold.metric} {before:.4g} -> {after:.4g} ({relative:+.1%} worse; limit {threshold.limit:.0%}, "
            f"measured spread {spread:.3g})"), note


def _scenarios(points) -> str:
    return ", ".join(sorted({scenario for scenario, _ in points})) or "none"


def _refuse_nothing_to_compare(base: dict, now: dict, scope: Optional[set[tuple[str, str]]]) -> None:
    """A gate that compared nothing has not passed: an empty baseline, or one that shares no point with
    the new records (another scenario's baseline, a deselected run), is a usage error."""
    if not base:
        raise UsageError("the baseline holds no records, so nothing can be compared; save one from a "
                         "complete run with `harness baseline save`")
    common = set(base) & set(now)
    if scope is not None:
        common &= scope
    if not common:
        raise UsageError(f"the baseline has no records in common with the results, so nothing can be "
                         f"compared (baseline: {len(base)} point(s) of scenarios {_scenarios(base)}; "
                         f"results: {len(now)} point(s) of scenarios {_scenarios(now)})")


def check(baseline: Iterable[Record], new: Iterable[Record], thresholds: list[Threshold],
          scope: Optional[set[tuple[str, str]]] = None) -> GateOutcome:
    """Gate ``new`` against ``baseline``. ``scope`` limits which baseline points must be present
    (pytest passes the points it selected; the command line checks all of them)."""
    base, now = index(baseline, "baseline"), index(new, "new records")
    _refuse_nothing_to_compare(base, now, scope)
    outcome = GateOutcome()
    for point, record in now.items():
        scenario, pid = point
        if record.status in ("failed", "timeout"):
            if point in base and base[point].status in ("failed", "timeout"):
                outcome.notes.append(f"{scenario}::{pid}: still {record.status}, as in the baseline")
                continue
            outcome.findings.append(Finding(scenario, pid, "failed", f"{record.status}: {record.reason}"))
            continue
        if record.verdict == "fail":
            reasons = "; ".join(record.correctness.reasons) or "see the record"
            outcome.findings.append(Finding(scenario, pid, "agreement", f"top-{record.correctness.k} "
                                            f"agreement fails: {reasons}"))
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
            outcome.findings.append(Finding(scenario, pid, "skipped", f"ran in the baseline, skipped now: {after.reason}"))
            continue
        if after.status != "ok":
            continue  # already reported above
        outcome.compared += 1
        if before.verdict == "pass" and after.verdict == "drift":
            outcome.notes.append(f"{scenario}::{pid}: agreement went from pass to drift")
        for threshold in thresholds:
            failure, note = metric_check(threshold, before, after)
            if failure:
                outcome.findings.append(Finding(scenario, pid, "regression", failure))
            if note:
                outcome.notes.append(note)
    return outcome
