"""Fake engines that start a helper process and then hang or crash, for tests/run/test_lifecycle.py.

Module-level classes, so an isolated worker can register them too (``harness.run.launchers.worker_serve`` passes
``module:qualname``). They report through files in ``$HARNESS_LIFECYCLE_TEST_DIR``: ``worker.pid`` and
``helper.pid`` once the helper runs; ``hung`` marks that the one hang has happened, so a resumed sweep
completes. ``cli(argv)`` is ``harness.cli.app.main`` with these adapters registered (and, with
``$HARNESS_SIGTERM_BEFORE_WRITE``, a SIGTERM of its own just before a record of that many launches is written).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.fakes import FakeAdapter

STATE_ENV = "HARNESS_LIFECYCLE_TEST_DIR"


def _start_helper() -> None:
    """A grandchild of the sweep, as engines start compiler or server helpers; its PID is written last."""
    state = Path(os.environ[STATE_ENV])
    helper = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
    for name, pid in (("worker", os.getpid()), ("helper", helper.pid)):
        (state / f"{name}.pid.tmp").write_text(str(pid))
        os.replace(state / f"{name}.pid.tmp", state / f"{name}.pid")


class HangOnceAdapter(FakeAdapter):
    """Hangs (with a helper running) at its batch-size-2 point, the first time only."""

    name = "fake-hang-once"

    def generate(self, prompts, max_new_tokens):
        marker = Path(os.environ[STATE_ENV]) / "hung"
        if self.point.batch_size == 2 and not marker.exists():
            marker.touch()
            _start_helper()
            time.sleep(3600)
        return super().generate(prompts, max_new_tokens)


class CrashWithHelperAdapter(FakeAdapter):
    """Starts a helper, then segfaults."""

    name = "fake-crash-helper"

    def generate(self, prompts, max_new_tokens):
        import ctypes

        _start_helper()
        ctypes.string_at(0)


class AbortAdapter(FakeAdapter):
    """Aborts, as a native engine does when an allocation fails (std::bad_alloc)."""

    name = "fake-abort"

    def generate(self, prompts, max_new_tokens):
        os.abort()


class SigtermAtLaunchAdapter(FakeAdapter):
    """Sends SIGTERM to the sweep (``$HARNESS_SWEEP_PID``; the worker's parent under isolation) while it
    generates in launch ``$HARNESS_SIGTERM_AT_LAUNCH`` (1-based; each launch loads the engine afresh, counted
    in ``loads`` in the state folder), then waits for the signal to land; 0 or unset: never."""

    name = "fake-sigterm-at"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        counter = Path(os.environ[STATE_ENV]) / "loads"
        counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))

    def generate(self, prompts, max_new_tokens):
        at = int(os.environ.get(SIGTERM_AT_LAUNCH, "0") or 0)
        if at and int((Path(os.environ[STATE_ENV]) / "loads").read_text()) == at:
            os.kill(int(os.environ[SWEEP_PID]), signal.SIGTERM)
            time.sleep(60)  # in the sweep's own process the handler raises here; a worker is killed with it
        return super().generate(prompts, max_new_tokens)


ALL = (HangOnceAdapter, CrashWithHelperAdapter, AbortAdapter, SigtermAtLaunchAdapter)
SIGTERM_AT_LAUNCH, SIGTERM_BEFORE_WRITE, SWEEP_PID = (
    "HARNESS_SIGTERM_AT_LAUNCH",
    "HARNESS_SIGTERM_BEFORE_WRITE",
    "HARNESS_SWEEP_PID",
)


def cli(argv: list[str]) -> int:
    from harness.adapters import registry
    from harness.cli.app import main

    for cls in ALL:
        registry.register_adapter(cls)
    os.environ[SWEEP_PID] = str(os.getpid())
    if os.environ.get(SIGTERM_BEFORE_WRITE):
        _sigterm_before_write(int(os.environ[SIGTERM_BEFORE_WRITE]))
    return main(argv)


def _sigterm_before_write(launches: int) -> None:
    """SIGTERM the sweep just before it writes a record holding ``launches`` launches: every launch of the
    point has run, its record is not yet written."""
    from harness.records import store

    write = store.write

    def interrupted_write(record, results_dir):
        if len(record.samples.launches) == launches:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)  # the handler raises here
        return write(record, results_dir)

    store.write = interrupted_write
