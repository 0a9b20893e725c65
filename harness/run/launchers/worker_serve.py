"""The isolated side of ``harness.run.launchers.worker_process``: ``python -m harness.run.launchers.worker_serve
--serve DIR --reply-fd N --watch-fd M [--memory-limit-mb L]`` reads its ``WorkerSetup`` (the run's settings,
whole) from ``DIR/setup.pickle``, imports the engine once, then serves points: for each number ``i`` read on
stdin it runs ``DIR/job-i.pickle``'s launch (a ``Job``), writes ``DIR/record-i.json`` and answers ``done i``
on the reply pipe. Its first answer is ``ready <seconds spent importing>``. Imports steps, never the runner.

``--watch-fd`` (always passed by the parent) is the read end of a pipe from the parent: before anything
else, a reaper is forked that kills this process group when the parent goes away
(``harness.run.lifecycle.die_with_parent``)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from harness.run.settings import RunSettings

if TYPE_CHECKING:
    from harness.records.samples import CanaryCalibration
    from harness.scenario.schema import Scenario

SETUP = "setup.pickle"


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker is started with, written whole by the parent: the run's settings, the run's canary
    calibration, the engine it serves, the adapters registered in the parent's process (``module:qualname``)
    and whether it keeps an engine loaded between points."""

    settings: RunSettings
    canary: Optional[CanaryCalibration]
    adapter: str
    keep_engines: bool
    in_process_adapters: dict[str, str] = field(default_factory=dict)
    first: Optional[Scenario] = None  # the first job's scenario: its tokenizer is parsed during the import

    @classmethod
    def of(cls, settings: RunSettings, canary, adapter: str, keep_engines: bool) -> WorkerSetup:
        return cls(settings, canary, adapter, keep_engines, _in_process_adapters())


@dataclass(frozen=True)
class Job:
    """One launch for the worker: the resolved scenario, the point, whether it is the point's first, and the
    run's canary calibration as it stands now (a recalibration mid-run reaches a kept worker with its next
    job, so the worker and its loaded engine are kept)."""

    scenario: Any  # harness.scenario.schema.Scenario
    point: Any  # harness.scenario.sweep.Point
    first_launch: bool = True
    canary: Optional[CanaryCalibration] = None


def _in_process_adapters() -> dict[str, str]:
    """Adapters registered in-process (tests, notebooks), as ``module:qualname`` for the worker to
    register too. Only module-level classes can cross; others stay unknown there."""
    from harness.adapters import registry

    return {
        name: f"{cls.__module__}:{cls.__qualname__}"
        for name, cls in registry.in_process().items()
        if cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__
    }


def _register_in_process_adapters(targets: dict[str, str]) -> None:
    from harness.adapters import registry

    for target in targets.values():
        module, _, qualname = target.partition(":")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        registry.register_adapter(cls)


def _import_engine(adapter: str) -> None:
    """The adapter's engine modules, once per worker; a failure is left to the point's load to report."""
    from harness.adapters import registry
    from harness.errors import HarnessError

    try:
        modules = registry.get(adapter).engine_modules
    except HarnessError:
        return
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the point's load reports it with the adapter's own words
            return


def serve(work: Path, reply_fd: int) -> int:
    start = time.perf_counter()
    setup: WorkerSetup = pickle.loads((work / SETUP).read_bytes())
    from harness.run import steps
    from harness.run.steps.caches import Caches

    _register_in_process_adapters(setup.in_process_adapters)
    if setup.canary is not None:  # the launch edges' canary child starts while the engine imports
        from harness.measure import canary_child

        canary_child.start()
    from harness.run.launchers import worker_prefetch

    parsing = worker_prefetch.start(setup.first, setup.settings.cache_dir)
    _import_engine(setup.adapter)
    if parsing is not None:
        parsing.join()  # part of the worker's start (its imports), and nothing of it overlaps a measurement
    reply = os.fdopen(reply_fd, "w", buffering=1)
    reply.write(f"ready {time.perf_counter() - start:.6f}\n")
    messages: list[str] = []
    caches = Caches(keep_engines=setup.keep_engines, canary=setup.canary)
    phase = work / "phase"  # read by the parent's progress bar

    def on_phase(text: str) -> None:
        phase.write_text(text, encoding="utf-8")

    try:
        for line in sys.stdin:
            index = int(line)
            job: Job = pickle.loads((work / f"job-{index}.pickle").read_bytes())
            messages.clear()
            caches.canary = job.canary
            record = steps.execute(
                setup.settings,
                caches,
                job.scenario,
                job.point,
                first_launch=job.first_launch,
                on_phase=on_phase,
                log=messages.append,
            )
            record.log = list(messages)
            # No flush to disk: the parent reads it only after ``done``, and a worker that dies while
            # writing never answers (the parent's copy in the results is written atomically, synced).
            (work / f"record-{index}.json").write_text(json.dumps(record.to_dict(), allow_nan=False))
            reply.write(f"done {index}\n")
    finally:
        caches.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="serve sweep points (used by harness itself)")
    parser.add_argument("--serve", required=True, metavar="DIR", help="the worker's folder (setup, jobs, records)")
    parser.add_argument("--reply-fd", type=int, required=True, help="write end of the reply pipe")
    parser.add_argument("--watch-fd", type=int, default=None, help="read end of the parent's watchdog pipe")
    parser.add_argument("--memory-limit-mb", type=int, default=None, help="this process's address-space limit")
    parsed = parser.parse_args()
    if parsed.watch_fd is not None:
        from harness.run.lifecycle import die_with_parent

        die_with_parent(parsed.watch_fd)  # first: before any engine can start a helper or a thread
    if parsed.memory_limit_mb:  # before any import can allocate
        limit = parsed.memory_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.exit(serve(Path(parsed.serve), parsed.reply_fd))
