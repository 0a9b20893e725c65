"""The parent's side of an isolated worker process, so a segfault, abort, hang or memory blow-up in an engine
becomes a result record instead of the end of the sweep.

A ``WorkerProcess`` is a child process (``python -m harness.run.launchers.worker_serve --serve``) started with
its ``WorkerSetup`` (the run's settings, whole, pickled into the worker's folder) that imports the engine
once and then serves points one at a time: the parent writes a launch's ``Job`` (the resolved scenario, the
point, whether it is the point's first launch) into the worker's folder and its number on the worker's
stdin; the worker runs the point's steps, writes the record beside the job and answers ``done N`` on a
reply pipe. If the worker dies or the point's time runs out first, the parent builds the record the way
every record starts (``harness.run.steps.new_record``), then ``failed`` with the signal or exit code and the
tail of the worker's output since the point began, or ``timeout``, and the worker is gone: the next point
starts a fresh one. A worker whose point failed is replaced too, since an engine that raised may be in any
state. ``harness.run.launchers.isolated`` decides which points a worker serves.

The worker leads its own process group, which the parent kills on every way out (close, crash, time-out,
exception, signal), so helpers an engine started die with it; if the parent itself is killed, the worker's
reaper kills the group (``harness.run.lifecycle``).
"""

from __future__ import annotations

import os
import pickle
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from harness.run import lifecycle
from harness.run.launchers import worker_records
from harness.run.launchers.worker_serve import SETUP, Job, WorkerSetup
from harness.run.steps.caches import Caches
from harness.run.steps.launch_context import quiet

if TYPE_CHECKING:
    from harness.scenario.schema import Scenario


class WorkerProcess:
    """One isolated worker process serving points one at a time (see the module docstring); ``caches`` are
    the parent's, for the records it builds itself. Use as a context manager, or call ``close``: the process
    group is killed on every way out."""

    def __init__(self, setup: WorkerSetup, caches: Caches, log: Callable[[str], None] = quiet):
        self.setup, self.caches, self.log = setup, caches, log
        self.limits = setup.settings.limits
        self.on_phase: Callable[[str], None] = quiet
        self.process: Optional[subprocess.Popen] = None
        self.jobs = 0
        self.startup: Optional[tuple[float, float]] = None  # (process start s, imports s), once ready
        # Of its start, the seconds the sweep waited for, when it started beside another worker (None: all of it).
        self.waited: Optional[float] = None

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, first: Optional[Scenario] = None) -> None:
        """Start the worker; ``first``: the scenario of its first job, whose tokenizer it parses while it imports."""
        _sweep_once()
        self.work = Path(tempfile.mkdtemp(prefix=lifecycle.work_prefix()))
        (self.work / SETUP).write_bytes(pickle.dumps(replace(self.setup, first=first)))
        self.output_path = self.work / "output.log"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()))
        watch_read, self._watch = os.pipe()
        self._reply, reply_write = os.pipe()
        self._lines: list[str] = []
        self._pending = b""
        self.jobs, self.startup, self.waited, self._ready = 0, None, None, None
        self._spawned = time.monotonic()
        with lifecycle.shielded(), self.output_path.open("ab") as output:  # no signal between start and knowing it
            try:
                limit = self.limits.memory_limit_mb
                self.process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "harness.run.launchers.worker_serve",
                        "--serve",
                        str(self.work),
                        "--watch-fd",
                        str(watch_read),
                        "--reply-fd",
                        str(reply_write),
                        *(["--memory-limit-mb", str(limit)] if limit else []),
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

    def run(self, scenario, point, first_launch: bool = True):
        """The launch's record, from this worker (started or replaced first when needed)."""
        from harness.run.steps.new_record import now_iso

        started = now_iso()
        if not self.alive:
            self.close()
            self.start(scenario)
        self.jobs += 1
        index, first = self.jobs, self.jobs == 1
        (self.work / f"job-{index}.pickle").write_bytes(
            pickle.dumps(Job(scenario, point, first_launch, self.caches.canary))
        )
        offset = self.output_path.stat().st_size
        sent = time.monotonic()
        start_before = first and self._ready is not None  # ready before its first job: its start is not in elapsed
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
            record = self._lost(scenario, point, outcome, offset, started)
            self.close()
        if record.status in ("failed", "timeout"):
            self.close()  # replaced at the next point: an engine that raised may be in any state
        self._account(record, first, elapsed, start_before)
        return record

    @property
    def ready_at(self) -> Optional[float]:
        """When it said ready (``time.monotonic``); None while it starts, or when it never did."""
        return self._ready

    @staticmethod
    def wait_any(workers: list[WorkerProcess], step: float) -> None:
        """Block until one of ``workers`` has answered (``starting`` or ``run`` then reads it), or ``step`` s."""
        alive = [worker._reply for worker in workers if worker.alive]
        if alive:
            select.select(alive, [], [], step)

    def starting(self, step: float) -> bool:
        """Whether it is still starting (neither ready nor gone), after reading its answers for up to ``step`` s."""
        return self.alive and self._ready is None and self._read(step) is None and self._ready is None

    def _await(self, line: str, deadline: Optional[float]) -> str:
        """``done`` when the worker answers ``line``; ``died`` or ``timeout`` otherwise. Relays the
        worker's phase to ``on_phase`` twice a second while it waits."""
        relay = PhaseRelay(self.work / "phase", self.on_phase)
        while True:
            if line in self._lines:
                self._lines.remove(line)
                return "done"
            step = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if step <= 0:
                return "timeout"
            if self._read(step) == "died":
                return "died"
            relay.poll()

    def _read(self, step: float) -> Optional[str]:
        """Take what the worker answered within ``step`` seconds (its ``ready``, its ``done`` lines); ``died``
        when it is gone."""
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
        return None

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

    def _lost(self, scenario, point, outcome: str, offset: int, started: str):
        """The record of a launch whose worker died or ran out of time: begun as every record begins."""
        from harness.run.steps.new_record import new_record, now_iso

        if outcome == "timeout":
            lifecycle.kill_group(self.process.pid)
        code = self.process.wait()
        record = new_record(self.caches, scenario, point, started_at=started)
        worker_records.lost(record, outcome, code, self.limits, self.output_path, offset)
        record.finished_at = now_iso()
        return record

    def _account(self, record, first: bool, elapsed: float, start_before: bool = False) -> None:
        startup = self.startup
        if startup is not None and self.waited is not None:  # started beside another: only the wait it added
            startup = worker_records.waited_part(startup, self.waited)
        worker_records.account(record, startup, first, elapsed, start_in_elapsed=not start_before)


class PhaseRelay:
    """The worker writes its current phase (loading, timing round i/n, ...) to a file; the parent passes
    changes on to its progress bar while it waits."""

    def __init__(self, path: Path, on_phase: Callable[[str], None]):
        self.path, self.on_phase, self.last = path, on_phase, None

    def poll(self) -> None:
        try:
            phase = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return
        if phase and phase != self.last:
            self.last = phase
            self.on_phase(phase)


_swept = False


def _sweep_once() -> None:
    """Work folders of killed runs are swept at this process's first worker."""
    global _swept
    if not _swept:
        _swept = True
        lifecycle.sweep_stale()
