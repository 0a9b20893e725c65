"""Run one sweep point in a child process, so a segfault, abort, hang or memory blow-up in an engine
becomes a result record instead of the end of the sweep.

The parent hands the child the resolved scenario and the point as JSON; the child (``python -m
harness.worker``) runs the point's steps in its own process and writes its record to a file the
parent named. If the child dies first, the parent writes the record: ``timeout`` after the time
limit, else ``failed`` with the signal or exit code and the tail of the child's output.

The child leads its own process group, which the parent kills on every way out of ``run_in_child``
(result, crash, time-out, exception, signal), so helpers an engine started die with their point; if the
parent itself is killed, the child's reaper kills the group (``harness.lifecycle``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness import lifecycle

TAIL_LINES = 40


@dataclass(frozen=True)
class Limits:
    timeout_s: Optional[float] = None
    memory_limit_mb: Optional[int] = None


def run_in_child(session_options: dict, scenario, point, limits: Limits, log=lambda message: None,
                 progress=lambda phase: None):
    """The point's record, produced by a child process (see module docstring)."""
    from harness import results
    from harness.record import Failure

    _sweep_once()
    with tempfile.TemporaryDirectory(prefix=lifecycle.work_prefix()) as work:
        work = Path(work)
        job = {
            "scenario": scenario.model_dump(mode="json"),
            "point": point.axes() | {"id": point.id},
            "session": session_options,
            "adapters": _in_process_adapters(),
            "memory_limit_mb": limits.memory_limit_mb,
        }
        (work / "job.json").write_text(json.dumps(job))
        record_file, output_file = work / "record.json", work / "output.log"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()))
        command = [sys.executable, "-m", "harness.worker", str(work / "job.json"), str(record_file)]
        with output_file.open("wb") as output:
            code, timed_out = _run_child(command, output, env, limits.timeout_s, _PhaseRelay(work / "phase", progress))
        if record_file.exists() and not timed_out:
            record = results.read(record_file)
            for message in record.log:  # the child's progress lines, in order
                log(message)
            record.log = []
            if limits.memory_limit_mb and record.status == "failed" and (record.reason or "").startswith("MemoryError"):
                separator = ": " if record.reason.rstrip().endswith(":") else "; "
                record.reason = f"{record.reason.rstrip().rstrip(':')}{separator}{_memory_limit(limits)}"
            return record
        tail = _tail(output_file)
        record = results.Record(
            scenario=scenario.name, point_id=point.id, point=point.axes(), status="failed",
            scenario_path=scenario.path, environment={},
        )
        if timed_out:
            record.status, record.reason = "timeout", f"no result within {limits.timeout_s:g} s; the process was killed"
        elif code < 0:
            name = signal.Signals(-code).name
            record.reason = f"the engine process was killed by {name} (signal {-code})"
            if -code == signal.SIGABRT and limits.memory_limit_mb:  # native engines abort when allocation fails
                record.reason += f"; most likely {_memory_limit(limits)}"
            elif -code == signal.SIGKILL and limits.memory_limit_mb:
                record.reason += f"; {_memory_limit(limits)}, or the OOM killer"
        else:
            record.reason = f"the engine process exited with code {code} before writing a result"
        record.failure = Failure(exit_code=code, output_tail=tail,
                                 signal=signal.Signals(-code).name if code is not None and code < 0 else None)
        return record


def _memory_limit(limits: Limits) -> str:
    return f"memory limit {limits.memory_limit_mb} MiB (--memory-limit-mb) reached"


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


def _wait(child, timeout_s: Optional[float], relay: Optional[_PhaseRelay]) -> None:
    """``child.wait(timeout_s)``, relaying the worker's phase twice a second."""
    if relay is None:
        child.wait(timeout=timeout_s)
        return
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        step = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
        if step <= 0:
            raise subprocess.TimeoutExpired(child.args, timeout_s)
        try:
            child.wait(timeout=step)
            return
        except subprocess.TimeoutExpired:
            relay.poll()


def _run_child(command: list[str], output, env: dict, timeout_s: Optional[float],
               relay: Optional[_PhaseRelay] = None) -> tuple[int, bool]:
    """Run the worker as the leader of a new process group; its exit code and whether it timed out.

    Whatever ends the wait (the worker's exit, the time limit, an exception or a signal raised here),
    the group is killed and the worker reaped before this returns or raises. The worker gets the read
    end of a pipe whose write end only this process holds: its reaper kills the group when that closes,
    which covers this process dying without reaching ``finally`` (kill -9)."""
    watch_read, watch_write = os.pipe()
    child = None
    timed_out = False
    try:
        with lifecycle.shielded():  # no signal between starting the child and knowing it
            try:
                child = subprocess.Popen(command + ["--watch-fd", str(watch_read)], pass_fds=(watch_read,),
                                         stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            finally:
                os.close(watch_read)
        try:
            _wait(child, timeout_s, relay)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        with lifecycle.shielded():
            if child is not None:
                lifecycle.kill_group(child.pid)  # the group outlives a finished worker: its reaper waits on us
                child.wait()
            os.close(watch_write)
    return child.returncode, timed_out


_swept = False


def _sweep_once() -> None:
    """Work folders of killed runs are swept at this process's first point."""
    global _swept
    if not _swept:
        _swept = True
        lifecycle.sweep_stale()


def _in_process_adapters() -> dict[str, str]:
    """Adapters registered in-process (tests, notebooks), as ``module:qualname`` for the child to
    register too. Only module-level classes can cross; others stay unknown there."""
    from harness import registry

    return {name: f"{cls.__module__}:{cls.__qualname__}" for name, cls in registry.in_process().items()
            if cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__}


def _tail(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])
