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
from typing import TYPE_CHECKING, Collection, Iterable, Mapping, Optional

from harness.records.verdict import RunVerdict, account

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.regression.entry import RegressionResult
    from harness.regression.outcome import MetricTest

CHANGED, UNKNOWN, SKIPPED = "changed", "unknown", "skipped"
ORDER = (CHANGED, UNKNOWN, SKIPPED)
MARK = {CHANGED: "❌", UNKNOWN: "❔", SKIPPED: "⏭️"}
SHOWN = 8  # points named in a skip row; the rest are counted
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


def _skip_rows(verdict: RunVerdict, seen: set[str] = frozenset()) -> list[Row]:
    """One row per reason (the run's account groups skips by reason), naming its points."""
    rows = []
    for group in verdict.skipped:
        points = [point for point in group.points if point not in seen]
        if points:
            shown = ", ".join(points[:SHOWN]) + (f" and {len(points) - SHOWN} more" if len(points) > SHOWN else "")
            rows.append(Row(SKIPPED, shown, f"{len(points)} skipped", group.reason))
    return rows


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
    rows += _skip_rows(account(records), {row.point for row in rows if row.group == SKIPPED})
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


def from_verdict(verdict: RunVerdict, title: str) -> CiSummary:
    """The summary of a run without a baseline (``harness run``, a pytest session) from its account
    (``harness.records.verdict``): failures, required points skipped and known failures now passing
    changed; points not complete or not judged unknown; skips by reason. The verdict is the run's exit."""
    rows = [Row(CHANGED, note.point, "failed", note.why) for note in verdict.failed]
    rows += [Row(CHANGED, note.point, "required, skipped", note.why) for note in verdict.required]
    rows += [Row(CHANGED, note.point, "known failure now passes", note.why) for note in verdict.fixed]
    rows += [Row(UNKNOWN, note.point, "not complete", note.why) for note in verdict.undecided]
    rows += [
        Row(UNKNOWN, point, "gate", "not judged: too few teacher-forced positions for the KL tier")
        for point in verdict.not_judged
    ]
    rows += _skip_rows(verdict)
    notes = [f"known failure still failing: {note}" for note in verdict.expected]
    return CiSummary(title, "FAIL" if verdict.exit_code() == 1 else "PASS", verdict.count_line(), rows, notes)


def from_records(records: Iterable[Record], title: str, required: Collection[str] | bool = False) -> CiSummary:
    """``from_verdict`` of the records' account."""
    return from_verdict(account(records, required=required), title)


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
