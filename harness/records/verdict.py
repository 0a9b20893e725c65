"""What a run's records add up to, and why it exits as it does: the one account ``harness run``, ``harness
summary`` and the pytest plugin print (and a CI page can render), so a nightly's verdict names every point
that failed, every known failure that now passes, every skip with its reason, and the reason for each
non-zero exit. Pure: records in, a ``RunVerdict`` out; no printing, no exit.

A status this module does not know (one a newer harness writes, e.g. a point left incomplete) is counted
under its own word and never read as a pass: it is listed and fails the run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Optional

from harness.errors import EXIT_INCONCLUSIVE
from harness.records.record import Record

FAILED = ("failed", "timeout")
DECIDED = ("ok", "skipped", *FAILED)


@dataclass(frozen=True)
class PointNote:
    """One point (``scenario::point id``) and what the verdict says of it."""

    point: str
    why: str

    def __str__(self) -> str:
        return f"{self.point}: {self.why}"


@dataclass(frozen=True)
class SkipGroup:
    """The points skipped for one reason (the records' ``reason``, word for word)."""

    reason: str
    points: tuple[str, ...]


@dataclass(frozen=True)
class RunVerdict:
    """The account of a set of records. ``counts``: points per status, in the order first seen (any
    status, known or not); ``failed``: points that failed (the engine, a timeout, the gate or a task's
    non-inferiority margin) and were not expected to; ``expected``: known failures that still fail;
    ``fixed``: known failures that now pass (``strict`` ones fail the run); ``skipped``: skips grouped by
    reason; ``required``: skipped points whose scenario (or ``--require-all``) requires every point;
    ``undecided``: points of a status this harness does not know; ``not_judged``: points whose gate is
    NOT JUDGED."""

    counts: dict[str, int]
    failed: tuple[PointNote, ...] = ()
    expected: tuple[PointNote, ...] = ()
    fixed: tuple[PointNote, ...] = ()
    strict_fixed: tuple[PointNote, ...] = ()
    skipped: tuple[SkipGroup, ...] = ()
    required: tuple[PointNote, ...] = ()
    undecided: tuple[PointNote, ...] = ()
    not_judged: tuple[str, ...] = ()
    verdict_failed: int = 0  # ok points among failed/expected whose gate or accuracy margin failed
    points: int = 0

    # -- the lines ---------------------------------------------------------------------------------

    def count_line(self) -> str:
        """``5 points (1 ok, 1 failed, 3 skipped)``, then what the statuses alone do not say: ok points
        whose gate or accuracy margin failed, known failures still failing or now passing."""
        parts = [f"{n} {status}" for status, n in self.counts.items()]
        flagged = [
            f"{self.verdict_failed} ok point(s) failed a verdict (gate or accuracy margin)"
            if self.verdict_failed
            else "",
            f"{len(self.expected)} known failure(s) still failing" if self.expected else "",
            f"{len(self.fixed)} known failure(s) now pass" if self.fixed else "",
        ]
        extra = "; ".join(part for part in flagged if part)
        return f"{self.points} points ({', '.join(parts) or 'none'})" + (f"; {extra}" if extra else "")

    def skip_line(self) -> Optional[str]:
        """``3 skipped: 2 × <reason>, 1 × <reason>``, or None when nothing was skipped."""
        if not self.skipped:
            return None
        total = sum(len(group.points) for group in self.skipped)
        return f"{total} skipped: " + ", ".join(f"{len(group.points)} × {group.reason}" for group in self.skipped)

    def lines(self) -> list[str]:
        """The verdict as lines: the counts, the skips by reason, then a line per point that failed, failed
        as expected, now passes, was required but skipped, or has a status not known here."""
        lines = [self.count_line(), *filter(None, [self.skip_line()])]
        lines += [f"FAILED {note}" for note in self.failed]
        if self.fixed:
            lines.append(
                f"FIXED: {len(self.fixed)} known failure(s) now pass: "
                + ", ".join(f"{note.point} ({note.why})" for note in self.fixed)
            )
        lines += [f"KNOWN FAILURE {note}" for note in self.expected]
        lines += [f"REQUIRED {note.point} was skipped: {note.why}" for note in self.required]
        lines += [f"NOT COMPLETE {note}" for note in self.undecided]
        return lines

    # -- the exit ----------------------------------------------------------------------------------

    def _failures(self) -> list[str]:
        return [
            text
            for count, text in (
                (len(self.failed), "point(s) failed"),
                (len(self.strict_fixed), "strict known failure(s) now pass (remove them from known_failures)"),
                (len(self.required), "required point(s) skipped"),
                (len(self.undecided), "point(s) not complete"),
            )
            for text in ([f"{count} {text}"] if count else [])
        ]

    def exit_code(self, fail_on_unknown: bool = False) -> int:
        """0: every point decided and passed (or failed as known); 1: a failure (``exit_line`` says which);
        4 (``EXIT_INCONCLUSIVE``): nothing failed but a point is not judged, under ``fail_on_unknown``."""
        if self._failures():
            return 1
        return EXIT_INCONCLUSIVE if fail_on_unknown and self.not_judged else 0

    def exit_line(self, fail_on_unknown: bool = False) -> Optional[str]:
        """``exit 1: 1 point(s) failed; 2 required point(s) skipped``, or None when the run exits 0."""
        code = self.exit_code(fail_on_unknown)
        if code == 0:
            return None
        reasons = self._failures() or [f"{len(self.not_judged)} point(s) not judged (--fail-on-unknown)"]
        return f"exit {code}: {'; '.join(reasons)}"


def failure_reasons(record: Record) -> list[str]:
    """Why a point failed, in words: the engine's error, or each verdict that failed (the gate's report,
    the task accuracy margins below their non-inferiority line)."""
    if record.status in FAILED:
        return [str(record.reason)]
    lines = []
    if record.verdict == "fail" and record.correctness is not None:
        lines.append(record.correctness.report or "gate: " + "; ".join(record.correctness.reasons))
    if record.accuracy is not None and record.accuracy.verdict == "fail":
        lines.append("task accuracy below its non-inferiority margin: " + "; ".join(record.accuracy.failed_margins()))
    return lines


def failure_line(record: Record) -> str:
    """``failure_reasons`` on one line: the first line of each reason (a gate report's headline)."""
    return "; ".join(line.split("\n")[0] for line in failure_reasons(record))


def account(records: Iterable[Record], required: Collection[str] | bool = False) -> RunVerdict:
    """The verdict of ``records``. ``required``: the scenarios (by name) whose every point must run, or
    True for all (``--require-all``): their skipped points fail the run."""
    records = list(records)
    counts: dict[str, int] = {}
    failed: list[PointNote] = []
    expected: list[PointNote] = []
    fixed: list[PointNote] = []
    strict: list[PointNote] = []
    required_skips: list[PointNote] = []
    undecided: list[PointNote] = []
    skips: dict[str, list[str]] = {}
    verdicts = 0
    for record in records:
        name = f"{record.scenario}::{record.point_id}"
        counts[record.status] = counts.get(record.status, 0) + 1
        known = record.known_failure
        if record.status == "skipped":
            skips.setdefault(str(record.reason), []).append(name)
            if required is True or (not isinstance(required, bool) and record.scenario in required):
                required_skips.append(PointNote(name, str(record.reason)))
        elif record.status not in DECIDED:
            undecided.append(PointNote(name, f"{record.status}" + (f": {record.reason}" if record.reason else "")))
        elif record.status in FAILED or record.verdict_failed:
            (expected if known else failed).append(PointNote(name, failure_line(record)))
            verdicts += record.status == "ok"
        elif known is not None:
            fixed.append(PointNote(name, known.reason))
            if known.strict:
                strict.append(PointNote(name, known.reason))
    return RunVerdict(
        counts=counts,
        failed=tuple(failed),
        expected=tuple(expected),
        fixed=tuple(fixed),
        strict_fixed=tuple(strict),
        skipped=tuple(SkipGroup(reason, tuple(points)) for reason, points in skips.items()),
        required=tuple(required_skips),
        undecided=tuple(undecided),
        not_judged=tuple(f"{r.scenario}::{r.point_id}" for r in records if r.status == "ok" and r.not_judged),
        verdict_failed=verdicts,
        points=len(records),
    )
