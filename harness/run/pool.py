"""The sweep's isolated workers (``harness.run.isolation.Worker``), one at a time: the worker of the current
group of points, those that share an engine and a model, so its imports, the resolved model and (where
the adapter allows, ``Adapter.can_serve``) the loaded engine serve every point of the group.

A point of another group, a launch pass that must start fresh, or a point that failed (its worker is gone
or replaced) gets a new worker. ``mode="point"`` starts one per point (the old per-point isolation).
"""

from __future__ import annotations

from typing import Callable, Optional

from harness.models import sources
from harness.run.isolation import Limits, Worker


class WorkerPool:
    def __init__(
        self,
        session_options: Callable[[], dict],
        mode: str = "worker",
        limits: Optional[Limits] = None,
        log: Callable[[str], None] = lambda message: None,
    ):
        self.session_options, self.mode, self.log = session_options, mode, log
        self.limits = limits if limits is not None else Limits()
        self.worker: Optional[Worker] = None
        self.key: Optional[tuple] = None
        self.started = 0  # workers started, for the isolation benchmark and tests

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, scenario, point, verify: bool = True, progress: Callable[[str], None] = lambda phase: None):
        """The point's record from the group's worker (a fresh one when the group changed)."""
        key = (sources.spec_key(scenario.model), point.adapter, verify)
        if self.mode == "point" or key != self.key:
            self.close()
        if self.worker is None:
            options = {**self.session_options(), "verify": verify, "reuse_engines": self.mode == "worker"}
            self.worker, self.key = Worker(options, point.adapter, self.limits, self.log), key
        if not self.worker.alive:
            self.started += 1
        self.worker.progress = progress
        try:
            return self.worker.run(scenario, point)
        finally:
            if self.mode == "point":
                self.close()

    def close(self) -> None:
        """End the current worker; the next point starts a fresh one."""
        if self.worker is not None:
            self.worker.close()
        self.worker, self.key = None, None
