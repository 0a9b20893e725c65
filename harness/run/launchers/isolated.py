"""Launches in isolated worker processes (``worker_process.WorkerProcess``), one worker at a time: the worker
of the current group of points, those that share an engine and a model, so its imports, the resolved model
and (where the adapter allows, ``Adapter.can_serve``) the loaded engine serve every point of the group.

A point of another group, a launch pass that must start fresh (``close``), or a point that failed (its
worker is gone or replaced) gets a new worker. ``PointLauncher`` starts one per point.
"""

from __future__ import annotations

from typing import Callable, Optional

from harness.models import sources
from harness.run.launchers.launcher import Launcher
from harness.run.launchers.worker_process import WorkerProcess
from harness.run.launchers.worker_serve import WorkerSetup
from harness.run.steps.launch_context import quiet


class WorkerLauncher(Launcher):
    keeps_worker = True  # a worker serves the points of its group, keeping its engine between them

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.worker: Optional[WorkerProcess] = None
        self.key: Optional[tuple] = None
        self.started = 0  # workers started, for the isolation benchmark and tests

    def launch(
        self,
        scenario,
        point,
        *,
        first_launch: bool = True,
        on_phase: Callable[[str], None] = quiet,
        on_round: Optional[Callable[[int], None]] = None,
    ):
        """The launch's record from the group's worker (a fresh one when the group changed)."""
        key = (sources.spec_key(scenario.model), point.adapter)
        if not self.keeps_worker or key != self.key:
            self.close()
        if self.worker is None:
            setup = WorkerSetup.of(self.settings, self.caches.canary, point.adapter, keep_engines=self.keeps_worker)
            self.worker, self.key = WorkerProcess(setup, self.caches, self.log), key
        if not self.worker.alive:
            self.started += 1
        self.worker.on_phase = on_phase
        try:
            return self.worker.run(scenario, point, first_launch)
        finally:
            if not self.keeps_worker:
                self.close()

    def close(self) -> None:
        """End the current worker; the next launch starts a fresh one."""
        if self.worker is not None:
            self.worker.close()
        self.worker, self.key = None, None


class PointLauncher(WorkerLauncher):
    keeps_worker = False
