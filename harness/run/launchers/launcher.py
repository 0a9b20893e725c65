"""The launcher interface: how one launch of a point runs (in this process, in a persistent isolated worker,
in a fresh process per point). The runner asks a launcher for a launch's record and never branches on the
isolation mode; ``harness.run.launchers.launcher_for`` chooses the class, in one place."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Optional

from harness.run.settings import RunSettings
from harness.run.steps.caches import Caches
from harness.run.steps.launch_context import quiet

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.scenario.schema import Scenario
    from harness.scenario.sweep import Point


class Launcher(ABC):
    """Runs launches with the run's ``settings``; ``caches`` are the runner's (an isolated worker keeps its
    own and the runner's only build the records its workers could not write); ``log`` hears progress lines.
    Use as a context manager, or call ``close``."""

    def __init__(self, settings: RunSettings, caches: Caches, log: Callable[[str], None] = quiet):
        self.settings, self.caches, self.log = settings, caches, log

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @abstractmethod
    def launch(
        self,
        scenario: Scenario,
        point: Point,
        *,
        first_launch: bool = True,
        on_phase: Callable[[str], None] = quiet,
        on_round: Optional[Callable[[int], None]] = None,
    ) -> Record:
        """One launch of the point, as its record (a failure in the engine is a record, never an exception).
        ``first_launch``: the correctness gate and accuracy run too; ``on_phase`` hears the point's phase;
        ``on_round`` each timed round (in this process only: a callback cannot cross to a worker)."""

    def expect(self, work: Sequence[tuple[Scenario, Point]]) -> None:
        """The launch pass's (scenario, point) pairs, in the order they will be launched: a launcher may
        prepare what later launches need (``isolated.WorkerLauncher`` starts the next group's worker early);
        by default nothing to prepare."""
        return None

    @abstractmethod
    def close(self) -> None:
        """End what the launcher keeps for the next launch (a worker): the next launch starts fresh."""
