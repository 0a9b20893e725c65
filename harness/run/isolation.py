"""Run sweep points in isolated worker processes, so a segfault, abort, hang or memory blow-up in an engine
becomes a result record instead of the end of the sweep.

A ``Worker`` is a child process (``python -m harness.run.worker --serve``) that imports the engine once and then
serves points one at a time: the parent writes a point's job (the resolved scenario and the point, as JSON)
into the worker's folder and its number on the worker's stdin; the worker runs the point's steps, writes
the record beside the job and answers ``done N`` on a reply pipe. If the worker dies or the point's time
runs out first, the parent writes the record (``failed`` with the signal or exit code and the tail of the
worker's output since the point began, or ``timeout``) and the worker is gone: the next point starts a
fresh one. A worker whose point failed is replaced too, since an engine that raised may be in any state.
``--isolation point`` is a worker per point; ``worker`` (the default) keeps one per group of points that
share an engine and a model (``harness.run.runner``).

The worker leads its own process group, which the parent kills on every way out (close, crash, time-out,
exception, signal), so helpers an engine started die with it; if the parent itself is killed, the worker's
reaper kills the group (``harness.run.lifecycle``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from harness.run import lifecycle, worker_records

MODES = ("worker", "point", "none")


@dataclass(frozen=True)
class Limits:
    timeout_s: Optional[float] = None  # per point
    memory_limit_mb: Optional[int] = None  # the worker's address space


class Worker:
    """One isolated worker process serving points one at a time (see the module docstring). Use as a
    context manager, or call ``close``: the process group is killed on every way out."""

    def __init__(
        self,
        session_options: dict,
        adapter: str,
        limits: Limits = Limits(),
        log: Callable[[str], None] = lambda message: None,
    ):
        self.session_options, self.adapter, self.limits, self.log = session_options, adapter, limits, log
        self.progress: Callable[[str], None] = lambda phase: None
        self.process: Optional[subprocess.Popen] = None
        self.jobs = 0
        self.startup: Optional[tuple[float, float]] = None  # (process start s, imports s), once ready

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        _sweep_once()
        self.work = Path(tempfile.mkdtemp(prefix=lifecycle.work_prefix()))
        config = {
            "session": self.session_options,
            "adapter": self.adapter,
            "adapters": _in_process_adapters(),
            "memory_limit_mb": self.limits.memory_limit_mb,
        }
        (self.work / "worker.json").write_text(json.dumps(config))
        self.output_path = self.work / "output.log"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()))
        watch_read, self._watch = os.pipe()
        self._reply, reply_write = os.pipe()
        self._lines: list[str] = []
        self._pending = b""
        self.jobs, self.startup, self._ready = 0, None, None
        self._spawned = time.monotonic()
        with lifecycle.shielded(), self.output_path.open("ab") as output:  # no signal between start and knowing it
            try:
                self.process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "harness.run.worker",
                        "--serve",
                        str(self.work),
                        "--watch-fd",
                        str(watch_read),
                        "--reply-fd",
                        str(reply_write),
                    ],
                    pass_fds=(watch_read, reply_write),
                    stdin=subprocess.PIPE,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            finally:
                os.close(watch_read)
                os.close(reply_write)
                if self.process is None:  # Popen failed: nothing will close these
                    os.close(self._watch)
                    os.close(self._reply)

    def close(self) -> None:
        """Kill the worker's group (it has nothing left to write) and remove its folder."""
        with lifecycle.shielded():
            if self.process is not None:
                lifecycle.kill_group(self.process.pid)  # the group outlives the worker: its reaper waits on us
                self.process.wait()
                if self.process.stdin:
                    self.process.stdin.close()
                self.process = None
                for fd in (self._watch, self._reply):
                    os.close(fd)
                shutil.rmtree(self.work, ignore_errors=True)

    def run(self, scenario, point):
        """The point's record, from this worker (started or replaced first when needed)."""
        if not self.alive:
            self.close()
            self.start()
        self.jobs += 1
        index, first = self.jobs, self.jobs == 1
        job = {"scenario": scenario.model_dump(mode="json"), "point": point.axes() | {"id": point.id}}
        (self.work / f"job-{index}.json").write_text(json.dumps(job))
        offset = self.output_path.stat().st_size
        sent = time.monotonic()
        deadline = None if self.limits.timeout_s is None else sent + self.limits.timeout_s
        try:
            self.process.stdin.write(f"{index}\n".encode())
            self.process.stdin.flush()
        except OSError:
            pass  # the worker died before its job: the wait below finds it gone
        outcome = self._await(f"done {index}", deadline)
        elapsed = time.monotonic() - sent
        if outcome == "done":
            record = self._record(index)
        else:
            record = self._lost(scenario, point, outcome, offset)
            self.close()
        if record.status in ("failed", "timeout"):
            self.close()  # replaced at the next point: an engine that raised may be in any state
        self._account(record, first, elapsed)
        return record

    def _await(self, line: str, deadline: Optional[float]) -> str:
        """``done`` when the worker answers ``line``; ``died`` or ``timeout`` otherwise. Relays the
        worker's phase to ``progress`` twice a second while it waits."""
        relay = _PhaseRelay(self.work / "phase", self.progress)
        while True:
            if line in self._lines:
                self._lines.remove(line)
                return "done"
            step = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if step <= 0:
                return "timeout"
            readable, _, _ = select.select([self._reply], [], [], step)
            if readable:
                chunk = os.read(self._reply, 4096)
                if not chunk:  # the worker closed its end: it is gone
                    return "died"
                self._pending += chunk
                *lines, self._pending = self._pending.split(b"\n")
                for text in (raw.decode() for raw in lines):
                    if text.startswith("ready "):
                        self._ready = time.monotonic()
                        imports = float(text.split()[1])
                        self.startup = (max(0.0, self._ready - self._spawned - imports), imports)
                    else:
                        self._lines.append(text)
            elif self.process.poll() is not None:
                return "died"
            relay.poll()

    def _record(self, index: int):
        from harness.records import store

        record = store.read(self.work / f"record-{index}.json")
        for message in record.log:  # the worker's progress lines, in order
            self.log(message)
        record.log = []
        if (
            self.limits.memory_limit_mb
            and record.status == "failed"
            and (record.reason or "").startswith("MemoryError")
        ):
            separator = ": " if record.reason.rstrip().endswith(":") else "; "
            record.reason = f"{record.reason.rstrip().rstrip(':')}{separator}{worker_records.memory_limit(self.limits)}"
        return record

    def _lost(self, scenario, point, outcome: str, offset: int):
        """The record of a point whose worker died or ran out of time."""
        if outcome == "timeout":
            lifecycle.kill_group(self.process.pid)
        code = self.process.wait()
        return worker_records.lost(scenario, point, outcome, code, self.limits, self.output_path, offset)

    def _account(self, record, first: bool, elapsed: float) -> None:
        worker_records.account(record, self.startup, first, elapsed)


class _PhaseRelay:
    """The worker writes its current phase (loading, timing round i/n, ...) to a file; the parent passes
    changes on to its progress bar while it waits."""

    def __init__(self, path: Path, progress):
        self.path, self.progress, self.last = path, progress, None

    def poll(self) -> None:
        try:
            phase = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return
        if phase and phase != self.last:
            self.last = phase
            self.progress(phase)


_swept = False


def _sweep_once() -> None:
    """Work folders of killed runs are swept at this process's first worker."""
    global _swept
    if not _swept:
        _swept = True
        lifecycle.sweep_stale()


def _in_process_adapters() -> dict[str, str]:
    """Adapters registered in-process (tests, notebooks), as ``module:qualname`` for the worker to
    register too. Only module-level classes can cross; others stay unknown there."""
    from harness.adapters import registry

    return {
        name: f"{cls.__module__}:{cls.__qualname__}"
        for name, cls in registry.in_process().items()
        if cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__
    }
