"""The isolated side of ``harness.isolation``: ``python -m harness.worker JOB RECORD`` runs one point's
steps and writes its record where the parent asked. Imports steps, never the runner.

``--watch-fd N`` (always passed by the parent) is the read end of a pipe from the parent: before
anything else, a reaper is forked that kills this process group when the parent goes away
(``harness.lifecycle.die_with_parent``)."""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
from pathlib import Path


def _register_in_process_adapters(targets: dict[str, str]) -> None:
    from harness import registry

    for target in targets.values():
        module, _, qualname = target.partition(":")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        registry.register_adapter(cls)


def run_job(job_file: str, record_file: str) -> int:
    from harness import steps
    from harness.io import write_json_atomic
    from harness.scenario import Scenario
    from harness.steps.session import Session
    from harness.sweep import Point

    job = json.loads(Path(job_file).read_text())
    if job["memory_limit_mb"]:
        limit = job["memory_limit_mb"] * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _register_in_process_adapters(job["adapters"])
    scenario = Scenario.model_validate(job["scenario"])
    point = Point(**job["point"])
    messages: list[str] = []
    session = Session.from_options(job["session"], log=messages.append)
    phase = Path(record_file).with_name("phase")  # read by the parent's progress bar
    session.progress = lambda text: phase.write_text(text, encoding="utf-8")
    record = steps.execute(session, scenario, point)
    record.log = messages
    write_json_atomic(record_file, record.to_dict(), indent=None)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="run one sweep point (used by harness itself)")
    parser.add_argument("job")
    parser.add_argument("record")
    parser.add_argument("--watch-fd", type=int, default=None, help="read end of the parent's watchdog pipe")
    parsed = parser.parse_args()
    if parsed.watch_fd is not None:
        from harness.lifecycle import die_with_parent

        die_with_parent(parsed.watch_fd)  # first: before any engine can start a helper or a thread
    sys.exit(run_job(parsed.job, parsed.record))
