"""The isolated side of ``harness.run.isolation``: ``python -m harness.run.worker --serve DIR --reply-fd N
--watch-fd M`` imports the engine once, then serves points: for each number ``i`` read on stdin it runs
``DIR/job-i.json``'s point, writes ``DIR/record-i.json`` and answers ``done i`` on the reply pipe. Its
first answer is ``ready <seconds spent importing>``. Imports steps, never the runner.

``--watch-fd`` (always passed by the parent) is the read end of a pipe from the parent: before anything
else, a reaper is forked that kills this process group when the parent goes away
(``harness.run.lifecycle.die_with_parent``)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
import time
from pathlib import Path


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
    config = json.loads((work / "worker.json").read_text())
    if config["memory_limit_mb"]:
        limit = config["memory_limit_mb"] * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    start = time.perf_counter()
    from harness.io import write_json_atomic
    from harness.run import steps
    from harness.run.steps.session import Session
    from harness.scenario.schema import Scenario
    from harness.scenario.sweep import Point

    _register_in_process_adapters(config["adapters"])
    _import_engine(config["adapter"])
    reply = os.fdopen(reply_fd, "w", buffering=1)
    reply.write(f"ready {time.perf_counter() - start:.6f}\n")
    messages: list[str] = []
    session = Session.from_options(config["session"], log=messages.append)
    phase = work / "phase"  # read by the parent's progress bar
    session.progress = lambda text: phase.write_text(text, encoding="utf-8")
    try:
        for line in sys.stdin:
            index = int(line)
            job = json.loads((work / f"job-{index}.json").read_text())
            messages.clear()
            record = steps.execute(session, Scenario.model_validate(job["scenario"]), Point(**job["point"]))
            record.log = list(messages)
            write_json_atomic(work / f"record-{index}.json", record.to_dict(), indent=None)
            reply.write(f"done {index}\n")
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="serve sweep points (used by harness itself)")
    parser.add_argument("--serve", required=True, metavar="DIR", help="the worker's folder (jobs and records)")
    parser.add_argument("--reply-fd", type=int, required=True, help="write end of the reply pipe")
    parser.add_argument("--watch-fd", type=int, default=None, help="read end of the parent's watchdog pipe")
    parsed = parser.parse_args()
    if parsed.watch_fd is not None:
        from harness.run.lifecycle import die_with_parent

        die_with_parent(parsed.watch_fd)  # first: before any engine can start a helper or a thread
    sys.exit(serve(Path(parsed.serve), parsed.reply_fd))
