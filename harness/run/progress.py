"""Progress for logs that are not a terminal (a CI job's log, a redirected stderr, pytest): lines, never ``\\r``
frames. A line when a point's phase changes kind (converting, gate reference, loading, gate prompts, timing,
launch k/N) — a counter moving within one kind (gate prompt 3/8 -> 4/8) waits for the heartbeat — and one
line per finished launch. A phase that goes quiet (a reference computed for minutes reports nothing while
it runs) is repeated with its elapsed time every ``HEARTBEAT_S`` by a watcher thread, so no log is silent
for longer. ``harness run`` on a terminal keeps its progress bar (``harness.run.runner``)."""

from __future__ import annotations

import re
import threading
import time
from typing import Callable, Optional

HEARTBEAT_S = 30.0  # the longest a running phase stays silent
_COUNTERS = re.compile(r"\d+(?:\+)?/\d+\+?|\d+")


def _kind(phase: str) -> str:
    """The phase without its counters: ``p: gate prompt 3/8`` and ``p: gate prompt 4/8`` are one kind."""
    return _COUNTERS.sub("#", phase)


class PhaseLines:
    """Turns the phase callbacks of points (``on_phase``) into log lines through ``write``, throttled as the
    module says. ``name`` is the scenario's name, prefixed as the progress bar shows it (``scenario::phase``).
    ``watch``: start the heartbeat thread on the first phase (off for tests that drive the clock)."""

    def __init__(
        self,
        write: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        watch: bool = True,
    ):
        self.write, self.clock, self.watch = write, clock, watch
        self.last_kind: Optional[str] = None
        self.last_at = float("-inf")
        self.current: Optional[str] = None  # the phase under way, None between points
        self.since = 0.0  # when the phase under way began
        self.lock = threading.Lock()
        self.watcher: Optional[threading.Thread] = None

    def _emit(self, text: str, now: float) -> None:
        self.write(text)
        self.last_at = now

    def phase(self, name: str, text: str) -> None:
        line, now = f"{name}::{text}", self.clock()
        with self.lock:
            kind = _kind(line)
            if kind != self.last_kind:
                self.since = now
            self.current = line
            if kind != self.last_kind or now - self.last_at >= HEARTBEAT_S:
                self._emit(line, now)
                self.last_kind = kind
        if self.watch and self.watcher is None:
            self.watcher = threading.Thread(target=self._heartbeat, name="harness-progress", daemon=True)
            self.watcher.start()

    def for_scenario(self, name: str) -> Callable[[str], None]:
        return lambda text: self.phase(name, text)

    def beat(self) -> None:
        """The heartbeat: the phase under way again, with how long it has run, when nothing was written for
        ``HEARTBEAT_S`` (the watcher thread calls it; tests call it with their clock)."""
        with self.lock:
            now = self.clock()
            if self.current is not None and now - self.last_at >= HEARTBEAT_S:
                self._emit(f"{self.current} (still running, {now - self.since:.0f} s)", now)

    def idle(self) -> None:
        """Between points: nothing under way, so the heartbeat is quiet."""
        with self.lock:
            self.current, self.last_kind = None, None

    def launch_done(self, done: int, total: int, name: str, status: str, seconds: float) -> None:
        """One line per finished launch: how far the sweep is, the point, its status and the launch's wall."""
        with self.lock:
            self._emit(f"[{done}/{total}] {name}: {status} in {seconds:.1f} s", self.clock())
            self.current, self.last_kind = None, None  # the next point's first phase is always shown

    def _heartbeat(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S / 3)
            self.beat()
