"""Run one sweep point in a child process, so a segfault, abort, hang or memory blow-up in an engine
becomes a result record instead of the end of the sweep.

The parent hands the child the resolved scenario and the point as JSON; the child (``python -m
harness.worker``) runs the point's steps in its own process and writes its record to a file the
parent named. If the child dies first, the parent writes the record: ``timeout`` after the time
limit, else ``failed`` with the signal or exit code and the tail of the child's output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

TAIL_LINES = 40


@dataclass(frozen=True)
class Limits:
    timeout_s: Optional[float] = None
    memory_limit_mb: Optional[int] = None


def run_in_child(session_options: dict, scenario, point, limits: Limits, log=lambda message: None):
    """The point's record, produced by a child process (see module docstring)."""
    from harness import results
    from harness.record import Failure

    with tempfile.TemporaryDirectory(prefix="harness-point-") as work:
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
        with output_file.open("wb") as output:
            child = subprocess.Popen(
                [sys.executable, "-m", "harness.worker", str(work / "job.json"), str(record_file)],
                stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
            try:
                code = child.wait(timeout=limits.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)  # the engine may have spawned helpers
                code = child.wait()
                timed_out = True
        if record_file.exists() and not timed_out:
            record = results.read(record_file)
            for message in record.log:  # the child's progress lines, in order
                log(message)
            record.log = []
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
            if -code == signal.SIGKILL and limits.memory_limit_mb:
                record.reason += f"; memory limit {limits.memory_limit_mb} MiB or the OOM killer"
        else:
            record.reason = f"the engine process exited with code {code} before writing a result"
        record.failure = Failure(exit_code=code, output_tail=tail,
                                 signal=signal.Signals(-code).name if code is not None and code < 0 else None)
        return record


def _in_process_adapters() -> dict[str, str]:
    """Adapters registered in-process (tests, notebooks), as ``module:qualname`` for the child to
    register too. Only module-level classes can cross; others stay unknown there."""
    from harness import registry

    return {name: f"{cls.__module__}:{cls.__qualname__}" for name, cls in registry.in_process().items()
            if cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__}


def _tail(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])
