"""Fake engines that start a helper process and then hang or crash, for tests/run/test_lifecycle.py.

Module-level classes, so an isolated worker can register them too (``harness.run.launchers.worker_serve`` passes
``module:qualname``). They report through files in ``$HARNESS_LIFECYCLE_TEST_DIR``: ``worker.pid`` and
``helper.pid`` once the helper runs; ``hung`` marks that the one hang has happened, so a resumed sweep
completes. ``cli(argv)`` is ``harness.cli.app.main`` with these adapters registered.
"""

from __future__ import annotations

import os
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


ALL = (HangOnceAdapter, CrashWithHelperAdapter, AbortAdapter)


def cli(argv: list[str]) -> int:
    from harness.adapters import registry
    from harness.cli.app import main

    for cls in ALL:
        registry.register_adapter(cls)
    return main(argv)
