"""A run's time budget (``harness run --budget 60m``, pytest's ``--harness-budget``, ``harness plan``): the
budget as the user wrote it, and the clock a run keeps against it. A run whose budget is spent starts no new
point: each point it does not start is recorded as skipped with the reason ("budget 60m spent after 3
points"), counted with the run's other skips (``harness.records.verdict``), and run again by ``--resume``."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from harness.records.record import Record

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_SKIP = re.compile(r"^budget \S+ spent after \d+ points?")  # the reason ``Clock.skip_reason`` writes


@dataclass(frozen=True)
class Budget:
    """A wall-clock budget: ``seconds``, and ``text`` as the user wrote it (what messages quote)."""

    seconds: float
    text: str

    def __str__(self) -> str:
        return self.text


def parse_budget(text: str) -> Budget:
    """``90s``, ``45m``, ``2h`` or a number of seconds; a ValueError says what was expected."""
    found = _DURATION.match(str(text))
    if found is None or float(found.group(1)) <= 0:
        raise ValueError(f"{text!r}: expected a positive duration such as 90s, 45m or 2h")
    number, unit = found.groups()
    return Budget(float(number) * _UNITS[unit or "s"], str(text).strip())


def skipped_for_budget(record: Record) -> bool:
    """A record this run (or an earlier one) skipped because its budget was spent: not a verdict on the point,
    so ``--resume`` runs it and ``harness plan`` reads no cost from it."""
    return record.status == "skipped" and bool(_SKIP.match(record.reason or ""))


@dataclass
class Clock:
    """The run's clock against its budget (None: no budget, never spent). It starts with the run's first point
    (``start``, idempotent) and counts the points the run started, for the skip reason."""

    budget: Optional[Budget] = None
    now: Callable[[], float] = time.monotonic
    started_at: Optional[float] = None
    points: int = 0
    _counted: set = field(default_factory=set)

    def start(self) -> None:
        if self.started_at is None:
            self.started_at = self.now()

    def began(self, key: tuple[str, str]) -> None:
        """A point was started (counted once, whatever its number of launches)."""
        self.start()
        if key not in self._counted:
            self._counted.add(key)
            self.points += 1

    def spent(self) -> bool:
        if self.budget is None:
            return False
        self.start()
        return self.now() - (self.started_at or 0.0) >= self.budget.seconds

    def skip_reason(self) -> str:
        return f"budget {self.budget} spent after {self.points} point{'' if self.points == 1 else 's'}"
