"""The run's settings: what the command line or the pytest plugin chose for a whole run, fixed before its
first point. The runner takes them whole and an isolated worker receives them whole (pickled), so a
setting is declared once, here. What lives shorter is elsewhere: the caches a process keeps between
points (``harness.run.steps.caches``), and a launch's switch and callbacks (arguments of
``harness.run.steps.execute`` and ``Launcher.launch``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from harness.run.budget import Budget


@dataclass(frozen=True)
class Limits:
    """What an isolated point may use before its worker is killed."""

    timeout_s: Optional[float] = None  # per point
    memory_limit_mb: Optional[int] = None  # the worker's address space


@dataclass(frozen=True)
class RunSettings:
    """``correctness_only`` runs only the correctness gate (``harness verify``: gate-only records, no timing);
    ``gate_prompts`` overrides the scenarios' gate prompt selection; ``launches`` overrides every scenario's
    ``measurement.launches``; ``isolation`` names the launcher (``harness.run.launchers``): ``worker``
    (persistent isolated workers, one per group of points sharing an engine and a model), ``point`` (a
    fresh process per point) or ``none`` (this process)."""

    results_dir: Optional[Path] = Path("results")  # None: no record is written
    cache_dir: Optional[Path] = None
    reference_dir: Optional[Path] = None  # None: default_reference_dir()
    correctness_only: bool = False
    gate_prompts: Union[str, int, None] = None
    refresh_reference: bool = False
    allow_remote_code: bool = False  # the command line's confirmation of model.trust_remote_code
    energy: bool = True  # energy (Zeus), CPU time and the roofline around the timed rounds
    isolation: str = "none"
    limits: Limits = field(default_factory=Limits)
    launches: Optional[int] = None
    recalibrate: bool = False  # take the canary's calibration afresh, not this machine's stored one
    budget: Optional[Budget] = None  # --budget: the run starts no new point once it is spent (harness.run.budget)

    @property
    def reference_store(self) -> Path:
        return self.reference_dir or default_reference_dir()


def default_reference_dir() -> Path:
    """Where a run given no reference directory keeps its gate references: ``$HARNESS_REFERENCE_DIR`` when set
    (the test suite points it at a store of its session, so an old ``results/references/`` in a checkout is never
    read), else ``results/references`` under the working directory. The command line always gives one
    (``--reference-dir``, by default ``<--results>/references``)."""
    from harness.io import REFERENCE_DIR

    return Path(os.environ.get("HARNESS_REFERENCE_DIR") or Path("results") / REFERENCE_DIR)
