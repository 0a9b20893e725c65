"""Progress for logs that are not a terminal (a CI job's log, a redirected stderr, pytest): lines, never ``\\r``
frames. A line when a point's phase changes kind (converting, gate reference, loading, gate prompts, timing,
launch k/N) — a counter moving within one kind (gate prompt 3/8 -> 4/8) waits for the heartbeat, so a long
phase says it is alive every ``HEARTBEAT_S`` without filling the log — and one line per finished launch.
``harness run`` on a terminal keeps its progress bar (``harness.run.runner``)."""

from __future__ import annotations

import re
import time
from typing import Callable

HEARTBEAT_S = 30.0  # the longest a running phase stays silent
_COUNTERS = re.compile(r"\d+(?:\+)?/\d+\+?|\d+")


def _kind(phase: str) -> str:
    """The phase without its counters: ``p: gate prompt 3/8`` and ``p: gate prompt 4/8`` are one kind."""
    return _COUNTERS.sub("#", phase)


class PhaseLines:
    """Turns the phase callbacks of points (``on_phase``) into log lines through ``write``, throttled as the
    module says. ``name`` is the scenario's name, prefixed as the progress bar shows it (``scenario::phase``)."""

    def __init__(self, write: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self.write, self.clock = write, clock
        self.last_kind: str | None = None
        self.last_at = float("-inf")

    def phase(self, name: str, text: str) -> None:
        kind, now = _kind(f"{name}::{text}"), self.clock()
        if kind != self.last_kind or now - self.last_at >= HEARTBEAT_S:
            self.write(f"{name}::{text}")
            self.last_kind, self.last_at = kind, now

    def for_scenario(self, name: str) -> Callable[[str], None]:
        return lambda text: self.phase(name, text)

    def launch_done(self, done: int, total: int, name: str, status: str, seconds: float) -> None:
        """One line per finished launch: how far the sweep is, the point, its status and the launch's wall."""
        self.write(f"[{done}/{total}] {name}: {status} in {seconds:.1f} s")
        self.last_kind = None  # the next point's first phase is always shown
