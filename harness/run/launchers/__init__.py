"""How a launch runs: one launcher class per ``--isolation`` mode behind one interface
(``launcher.Launcher``), chosen here and nowhere else (``LAUNCHERS``).

- ``in_process.InProcessLauncher`` (``none``): in this process.
- ``isolated.WorkerLauncher`` (``worker``, the command line's default): persistent isolated workers, one
  per group of points sharing an engine and a model; ``isolated.PointLauncher`` (``point``): a fresh
  worker per point. Both drive ``worker_process.WorkerProcess`` (the parent's side of a worker), whose
  child runs ``worker_serve``; ``worker_records`` builds what only the parent knows (a lost worker's
  failure, the worker's start in the time split).

Light on purpose: the command line reads ``LAUNCHERS`` to build ``--isolation``, and a worker's child starts in
this package, so the launchers import only when chosen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Callable, NamedTuple

if TYPE_CHECKING:
    from harness.run.launchers.launcher import Launcher
    from harness.run.settings import RunSettings
    from harness.run.steps.caches import Caches


class Mode(NamedTuple):
    target: str  # the launcher class, module:class under this package
    help: str  # what the mode does, for --isolation's help


LAUNCHERS = {
    "worker": Mode(
        "isolated:WorkerLauncher",
        "points run in isolated worker processes that live across the points sharing an engine and a model, so "
        "a crash or hang fails only that point",
    ),
    "point": Mode("isolated:PointLauncher", "a fresh process per point"),
    "none": Mode("in_process:InProcessLauncher", "all in this process (no protection)"),
}


def launcher_for(settings: RunSettings, caches: Caches, log: Callable[[str], None] = lambda message: None) -> Launcher:
    """The launcher of ``settings.isolation``, with the runner's caches and log."""
    mode = LAUNCHERS.get(settings.isolation)
    if mode is None:
        raise ValueError(f"isolation: expected one of {', '.join(LAUNCHERS)}, got {settings.isolation!r}")
    module, _, name = mode.target.partition(":")
    cls = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return cls(settings, caches, log)
