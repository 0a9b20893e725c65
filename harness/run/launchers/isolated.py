"""Launches in isolated worker processes (``worker_process.WorkerProcess``), one serving at a time: the worker
of the current group of points, those that share an engine and a model, so its imports, the resolved model
and (where the adapter allows, ``Adapter.can_serve``) the loaded engine serve every point of the group.

A point of another group, a launch pass that must start fresh (``close``), or a point that failed (its
worker is gone or replaced) gets a new worker. ``PointLauncher`` starts one per point.

When a group's worker starts, the next group's starts beside it (``expect`` gives the pass's order), so its
process start and engine import overlap this one's instead of following the group; this group's first point
is sent only once the next group's worker is ready (or gone), so no start overlaps a measurement, and the next
group's first record counts only the wait its worker added. It then waits idle, its engine imported, until
its group comes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Callable, Optional

from harness.models import sources
from harness.run.launchers import worker_records
from harness.run.launchers.launcher import Launcher
from harness.run.launchers.worker_process import WorkerProcess
from harness.run.launchers.worker_serve import WorkerSetup
from harness.run.steps.launch_context import quiet

# Once a group's worker is ready, how long the next group's may still take to start before it is ended (an
# engine import takes seconds; a hung one must not hold back this group's points).
SPARE_GRACE_S = 60.0


class WorkerLauncher(Launcher):
    keeps_worker = True  # a worker serves the points of its group, keeping its engine between them

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.worker: Optional[WorkerProcess] = None
        self.key: Optional[tuple] = None
        self.started = 0  # workers started, for the isolation benchmark and tests
        self.groups: list[tuple[tuple, object, str]] = []  # the pass's groups in order: (key, scenario, adapter)
        self.spare: Optional[WorkerProcess] = None  # the next group's worker, started beside the current one
        self.spare_key: Optional[tuple] = None

    def expect(self, work: Sequence[tuple]) -> None:
        """The pass's launches, in order: a group's worker, when it starts, starts the next group's beside it."""
        self.groups = []
        for scenario, point in work if self.keeps_worker else ():
            key = (sources.spec_key(scenario.model), point.adapter)
            if not self.groups or self.groups[-1][0] != key:
                self.groups.append((key, scenario, point.adapter))

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
            self._end_worker()
        if self.worker is None and self.spare is not None and self.spare_key == key:
            if self.spare.alive:  # started beside the previous group's: ready, its engine imported
                self.worker, self.key = self.spare, key
            else:  # died while it waited: its group starts a fresh one
                self.spare.close()
            self.spare, self.spare_key = None, None
        if self.worker is None:
            self.worker, self.key = self._worker(point.adapter), key
        if not self.worker.alive:
            self.started += 1
            self.worker.close()  # one that died (its pipes, folder and process group) before a fresh start
            self.worker.start(scenario)
            self._start_next(key, lambda text: on_phase(f"{point.id}: {text}"))
        self.worker.on_phase = on_phase
        try:
            return self.worker.run(scenario, point, first_launch)
        finally:
            if not self.keeps_worker:
                self.close()

    def close(self) -> None:
        """End the current worker and the next group's; the next launch starts fresh ones (and ``expect``
        gives the next pass's order)."""
        self._end_worker()
        if self.spare is not None:
            self.spare.close()
        self.spare, self.spare_key, self.groups = None, None, []

    def _end_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
        self.worker, self.key = None, None

    def _worker(self, adapter: str) -> WorkerProcess:
        setup = WorkerSetup.of(self.settings, self.caches.canary, adapter, keep_engines=self.keeps_worker)
        return WorkerProcess(setup, self.caches, self.log)

    def _start_next(self, key: tuple, on_phase: Callable[[str], None]) -> None:
        """Start the worker of the group after ``key``'s beside the one just started and wait until it is ready
        (or gone) before this one gets a point: nothing is measured while a worker starts. It records only the
        wait it added to this one's start. One still starting ``SPARE_GRACE_S`` after this one is ready (or at
        the point time limit) is ended: its group starts a fresh worker, whose failure its points record."""
        keys = [group[0] for group in self.groups]
        if self.spare is not None or key not in keys or keys.index(key) + 1 >= len(keys):
            return
        next_key, scenario, adapter = self.groups[keys.index(key) + 1]
        if next_key == key:
            return
        self.spare, self.spare_key = self._worker(adapter), next_key
        self.started += 1
        self.spare.start(scenario)
        on_phase(f"starting its worker, and the {adapter} worker of the next group beside it")
        began = time.monotonic()
        timeout = self.settings.limits.timeout_s
        limit = None if timeout is None else began + timeout
        grace = None  # until when the spare may still start, once this group's worker is ready or gone
        while self.spare.starting(0.0):
            now = time.monotonic()
            if grace is None and not self.worker.starting(0.0):
                grace = now + SPARE_GRACE_S
            if any(end is not None and now > end for end in (grace, limit)):
                break
            WorkerProcess.wait_any([w for w in (self.worker, self.spare) if w.ready_at is None], 0.5)
        if self.spare.ready_at is None:  # gone or not ready in time: its group starts a fresh one and meets it there
            self.spare.close()
            self.spare, self.spare_key = None, None
            return
        self.spare.waited = worker_records.spare_wait(
            began, self.worker.ready_at, self.worker.alive, self.spare.ready_at
        )


class PointLauncher(WorkerLauncher):
    keeps_worker = False
