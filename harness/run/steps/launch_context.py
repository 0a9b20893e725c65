"""What one launch's steps read, kept apart by lifetime: the run's settings (fixed for the run), the caches
of the process running the launch (its sweep's or its worker's), and this launch's switch and callbacks
(given to ``harness.run.steps.execute`` as arguments, never set on a shared object)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from harness.run.settings import RunSettings
from harness.run.steps.caches import Caches


def quiet(message: str) -> None:
    """A callback that shows nothing."""


@dataclass(frozen=True)
class LaunchContext:
    settings: RunSettings
    caches: Caches = field(default_factory=Caches)
    # A point's first launch runs the correctness gate and accuracy; later ones time it only.
    first_launch: bool = True
    # The point's phase ("converting the model", "timing round 2/4", "gate prompt 1/2"), e.g. a progress
    # bar's postfix; an isolated worker relays it through a file (harness.run.launchers.worker_process).
    on_phase: Callable[[str], None] = quiet
    log: Callable[[str], None] = quiet

    @property
    def timing(self) -> bool:
        """The timed rounds run (not ``harness verify``'s gate-only run)."""
        return not self.settings.gate_only
