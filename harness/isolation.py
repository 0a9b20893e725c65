"""Run one sweep point in a child process, so a segfault, abort, hang or memory blow-up in an engine
becomes a result record instead of the end of the sweep.

The parent hands the child the resolved scenario and the point as JSON; the child (``python -m
harness.isolation``) runs the point with an in-process Runner and writes its record to a file the
parent named. If the child dies first, the parent writes the record: ``timeout`` after the time
limit, else ``failed`` with the signal or exit code and the tail of the child's output.
"""

from __future__ import annotations

import argparse
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


def run_in_child(runner, scenario, point, limits: Limits):
    """The point's record, produced by a child process (see module docstring)."""
    from harness import results

    with tempfile.TemporaryDirectory(prefix="harness-point-") as work:
        work = Path(work)
        job = {
            "scenario": scenario.model_dump(mode="json"),
            "point": point.axes() | {"id": point.id},
            "runner": {
                "cache_dir": str(runner.cache_dir) if runner.cache_dir else None,
                "reference_dir": str(runner.reference_dir) if runner.reference_dir else None,
                "timing": runner.timing,
                "gate_prompts": runner.gate_prompts,
                "refresh_reference": runner.refresh_reference,
                "allow_remote_code": runner.allow_remote_code,
                "energy": runner.energy,
            },
            "adapters": _in_process_adapters(),
            "memory_limit_mb": limits.memory_limit_mb,
        }
        (work / "job.json").write_text(json.dumps(job))
        record_file, output_file = work / "record.json", work / "output.log"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()))
        with output_file.open("wb") as output:
            child = subprocess.Popen(
                [sys.executable, "-m", "harness.isolation", str(work / "job.json"), str(record_file)],
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
            for message in record.details.pop("log", []):  # the child's progress lines, in order
                runner.log(message)
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
        record.details = {"exit_code": code, "output_tail": tail}
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


def _child(job_file: str, record_file: str) -> int:
    import importlib
    import resource

    from harness import results
    from harness.runner import Runner
    from harness.scenario import Scenario
    from harness.sweep import Point

    job = json.loads(Path(job_file).read_text())
    if job["memory_limit_mb"]:
        limit = job["memory_limit_mb"] * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from harness import registry

    for target in job["adapters"].values():
        module, _, qualname = target.partition(":")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        registry.register_adapter(cls)
    scenario = Scenario.model_validate(job["scenario"])
    point = Point(**job["point"])
    options = job["runner"]
    messages: list[str] = []
    runner = Runner(
        results_dir=None,
        cache_dir=Path(options["cache_dir"]) if options["cache_dir"] else None,
        reference_dir=Path(options["reference_dir"]) if options["reference_dir"] else None,
        timing=options["timing"], gate_prompts=options["gate_prompts"],
        refresh_reference=options["refresh_reference"], allow_remote_code=options["allow_remote_code"],
        energy=options["energy"],
        log=messages.append,
    )
    record = runner.run_point(scenario, point)
    record.details["log"] = messages
    target = Path(record_file)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_dict()))
    tmp.replace(target)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="run one sweep point (used by harness itself)")
    parser.add_argument("job")
    parser.add_argument("record")
    parsed = parser.parse_args()
    sys.exit(_child(parsed.job, parsed.record))
