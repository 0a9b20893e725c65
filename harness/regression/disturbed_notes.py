"""The regression check's notes on disturbed launches, grouped: one note listing every compared point whose
launches were excluded from the significance test (with how many of how many, per side), and one listing
the points disturbed throughout (fewer than two undisturbed launches, so the test counts them all). A CI
log of a loaded night reads two lines, not one per excluded launch per side."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.records.record import Record, disturbed_throughout

SHOWN = 8  # points named in a note; the rest are counted


def _count(record: Record) -> str:
    launches = record.samples.launches
    excluded = sum(1 for launch in launches if launch.excluded)
    return f"{excluded} of {len(launches)}" if excluded and len(launches) >= 2 else ""


def _listed(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


@dataclass
class DisturbedNotes:
    excluded: list[str] = field(default_factory=list)  # "scenario::id (baseline 1 of 3, new 2 of 4)"
    throughout: list[str] = field(default_factory=list)  # "scenario::id (new)"

    def add(self, scenario: str, point_id: str, before: Record, after: Record) -> None:
        sides = (("baseline", before), ("new", after))
        counts = [f"{side} {count}" for side, record in sides if (count := _count(record))]
        if counts:
            self.excluded.append(f"{scenario}::{point_id} ({', '.join(counts)})")
        whole = [side for side, record in sides if disturbed_throughout(record)]
        if whole:
            self.throughout.append(f"{scenario}::{point_id} ({', '.join(whole)})")

    def notes(self) -> list[str]:
        out = []
        if self.excluded:
            out.append(
                f"launches excluded from the significance test as disturbed (kept in the records; the run "
                f"table and summary give each reason) in {len(self.excluded)} point(s): {_listed(self.excluded)}"
            )
        if self.throughout:
            out.append(
                f"under two undisturbed launches in {len(self.throughout)} point(s), so the significance test "
                "counts the disturbed ones too; their figures may be the machine's, not the build's — rerun on "
                f"a quiet machine: {_listed(self.throughout)}"
            )
        return out
