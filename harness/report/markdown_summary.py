"""The CI page: a short Markdown summary of a run or a regression check, for GitHub's job summary
(``$GITHUB_STEP_SUMMARY``) or a pull-request comment (``--markdown FILE``).

The verdict comes first, in one line; then one table of what needs a reader: what changed (a regression, a
failed point, a gate that failed, a point lost), what is unknown (inconclusive tests, a gate not judged,
points that could not be compared) and what was skipped, each with its reason; then the notes, folded.
Built in two steps: ``from_regression`` / ``from_records`` make a ``CiSummary`` (typed, no I/O), ``render``
turns it into Markdown, ``write`` puts it where it was asked for."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Optional

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.regression.entry import RegressionResult
    from harness.regression.outcome import MetricTest

CHANGED, UNKNOWN, SKIPPED = "changed", "unknown", "skipped"
ORDER = (CHANGED, UNKNOWN, SKIPPED)
MARK = {CHANGED: "❌", UNKNOWN: "❔", SKIPPED: "⏭️"}
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # GitHub Actions: Markdown appended here shows on the job's page


@dataclass(frozen=True)
class Row:
    """One line of the table: a point (``scenario::id``), which group it is in, the metric or check, and why."""

    group: str  # CHANGED | UNKNOWN | SKIPPED
    point: str
    what: str
    detail: str


@dataclass
class CiSummary:
    title: str  # "harness gate vs nightly", "harness run", "pytest"
    verdict: str  # PASS | FAIL | INCOMPARABLE
    headline: str  # the counts the verdict rests on
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def render(summary: CiSummary) -> str:
    icon = {"PASS": "✅", "FAIL": "❌"}.get(summary.verdict, "⚠️")
    lines = [f"## {icon} {summary.title}: {summary.verdict}", "", summary.headline, ""]
    rows = sorted(summary.rows, key=lambda row: ORDER.index(row.group))
    if rows:
        counts = ", ".join(f"{sum(r.group == g for r in rows)} {g}" for g in ORDER if any(r.group == g for r in rows))
        lines += [f"**Needs a look** ({counts}):", "", "| | point | what | detail |", "|---|---|---|---|"]
        lines += [
            f"| {MARK[row.group]} {row.group} | `{_cell(row.point)}` | {_cell(row.what)} | {_cell(row.detail)} |"
            for row in rows
        ]
        lines.append("")
    else:
        lines += ["Nothing changed, nothing unknown, nothing skipped.", ""]
    if summary.notes:
        lines += [f"<details><summary>{len(summary.notes)} note(s)</summary>", ""]
        lines += [f"- {_cell(note)}" for note in summary.notes]
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def _test_detail(test: MetricTest) -> str:
    parts = [f"{test.change:+.1%} ({test.before:.4g} → {test.after:.4g})"]
    if test.ratio_low is not None and test.ratio_high is not None:
        parts.append(f"95% CI [{test.ratio_low - 1:+.1%}, {test.ratio_high - 1:+.1%}]")
    parts.append(f"{test.launches[0]} vs {test.launches[1]} launches")
    if test.verdict == "unknown":
        needed = test.launches_needed
        parts.append(
            "more than 50 launches a side would decide it"
            if needed is None
            else f"~{needed} launches a side would decide it"
        )
    return "; ".join(parts)


def _skipped(records: Iterable[Record], seen: set[str]) -> list[Row]:
    return [
        Row(SKIPPED, name, "skipped", str(record.reason or "no reason given"))
        for record in records
        if record.status == "skipped" and (name := f"{record.scenario}::{record.point_id}") not in seen
    ]


def from_regression(result: RegressionResult, records: Iterable[Record] = ()) -> CiSummary:
    """The summary of ``harness gate`` (or pytest's ``--harness-baseline``): its findings, tests and notes;
    ``records`` (the new run's) add the points it skipped."""
    outcome = result.outcome
    rows = []
    for finding in outcome.findings:
        group = SKIPPED if finding.kind == "skipped" else CHANGED
        rows.append(
            Row(group, f"{finding.scenario}::{finding.point_id}", finding.metric or finding.kind, finding.message)
        )
    for test in outcome.tests:
        if test.verdict == "different" and test.change < 0:
            rows.append(
                Row(CHANGED, f"{test.scenario}::{test.point_id}", f"{test.metric} (better)", _test_detail(test))
            )
        elif test.verdict == "different" and not any(
            r.point == f"{test.scenario}::{test.point_id}" and r.what == test.metric for r in rows
        ):
            rows.append(Row(CHANGED, f"{test.scenario}::{test.point_id}", test.metric, _test_detail(test)))
        elif test.verdict == "unknown":
            rows.append(Row(UNKNOWN, f"{test.scenario}::{test.point_id}", test.metric, _test_detail(test)))
    for change in outcome.verdict_changes:
        rows.append(
            Row(CHANGED, f"{change.scenario}::{change.point_id}", "gate verdict", f"{change.before} → {change.after}")
        )
    for finding in [*outcome.incomparable, *outcome.not_judged]:
        rows.append(Row(UNKNOWN, f"{finding.scenario}::{finding.point_id}", finding.kind, finding.message))
    rows += _skipped(records, {row.point for row in rows if row.group == SKIPPED})
    if outcome.findings:
        verdict = "FAIL"
    elif outcome.incomparable:
        verdict = "INCOMPARABLE"
    else:
        verdict = "PASS"
    tally = {word: sum(t.verdict == word for t in outcome.tests) for word in ("different", "same", "unknown")}
    headline = f"{outcome.compared} point(s) compared against `{result.baseline}`" + (
        f"; launch-level tests: {tally['different']} different, {tally['same']} same, {tally['unknown']} unknown"
        if outcome.tests
        else ""
    )
    return CiSummary(f"harness gate vs {result.baseline}", verdict, headline, rows, list(outcome.notes))


def from_records(records: Iterable[Record], title: str) -> CiSummary:
    """The summary of a run without a baseline (``harness run``, a pytest session): failed points and failed
    gates changed, gates not judged unknown, skipped points with their reasons."""
    from harness.records.correctness import NOT_JUDGED

    records = list(records)
    rows = []
    for record in records:
        name = f"{record.scenario}::{record.point_id}"
        if record.status in ("failed", "timeout"):
            rows.append(Row(CHANGED, name, record.status, str(record.reason or "")))
        elif record.verdict_failed:
            report = record.correctness.report if record.correctness else ""
            rows.append(Row(CHANGED, name, "gate", (report or "failed").splitlines()[0]))
        elif record.verdict == NOT_JUDGED:
            rows.append(Row(UNKNOWN, name, "gate", "not judged: too few teacher-forced positions for the KL tier"))
    rows += _skipped(records, set())
    statuses = {s: sum(r.status == s for r in records) for s in ("ok", "failed", "timeout", "skipped")}
    headline = f"{len(records)} point(s): " + ", ".join(f"{n} {s}" for s, n in statuses.items() if n)
    verdict = "FAIL" if any(row.group == CHANGED for row in rows) else "PASS"
    return CiSummary(title, verdict, headline, rows)


def write(summary: CiSummary, path: Optional[str | Path] = None, env: Optional[Mapping[str, str]] = None) -> list[Path]:
    """Write the rendered summary to ``path`` (replacing it) and append it to ``$GITHUB_STEP_SUMMARY`` when
    that is set; returns the files written."""
    from harness.io import write_bytes_atomic

    text = render(summary)
    written = []
    if path:
        write_bytes_atomic(path, text.encode("utf-8"))
        written.append(Path(path))
    step = (os.environ if env is None else env).get(STEP_SUMMARY)
    if step:
        with open(step, "a", encoding="utf-8") as handle:  # GitHub's file: other steps append to it too
            handle.write(text + "\n")
        written.append(Path(step))
    return written
