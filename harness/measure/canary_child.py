"""The canary's child process (``harness.measure.canary``): ``python -m harness.measure.canary_child`` answers
each count written to its stdin with that many readings (``canary._readings``: the workload built afresh, one
untimed run, then each reading the median of ``canary.TIMES`` runs), one JSON line each.

One child serves every reading of the process that started it (the run's calibration and check, a worker's
launch edges): before issue #41 each reading started a fresh child, whose start (Python and numpy, about 0.2 s
on a 2-core runner) was paid at both edges of every launch, outside the part it times. A worker starts its
child while it imports its engine (``start``), so even the first edge finds it ready.

The child ends when its stdin closes, so it never outlives its owner (a worker's is in the worker's process
group as well, which the run kills); it ignores SIGINT, since a Ctrl-C is its owner's to handle.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional


class Child:
    """One canary child (see the module docstring); its stderr is kept for the error a failure raises."""

    def __init__(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()))
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.measure.canary_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            env=env,
        )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def readings(self, count: int) -> list[float]:
        """``count`` readings; a RuntimeError with the child's last words when it died or failed."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None  # both are pipes (``__init__``)
        try:
            stdin.write(f"{count}\n")
            stdin.flush()
            line = stdout.readline()
        except OSError:
            line = ""
        if not line:
            self.close()
            self.errors.seek(0)
            tail = self.errors.read().decode(errors="replace").strip()[-500:]
            raise RuntimeError(f"the machine-speed canary failed (exit {self.process.returncode}): {tail}")
        return [float(value) for value in json.loads(line)]

    def close(self) -> None:
        if self.alive and self.process.stdin is not None:
            self.process.stdin.close()  # EOF: the child's loop ends
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.errors.close()


_child: Optional[Child] = None


def start() -> Child:
    """Start this process's canary child now (a worker does, while it imports its engine) unless it runs."""
    global _child
    if _child is None or not _child.alive:
        _child = Child()
        atexit.register(_child.close)
    return _child


def stop() -> None:
    """End this process's canary child (the next reading starts a new one)."""
    global _child
    if _child is not None:
        _child.close()
        _child = None


def readings(count: int) -> list[float]:
    """``count`` readings from this process's child, started (or, when it died, started again) first."""
    return start().readings(count)


def _serve() -> None:
    """The child's loop: a count per line in, that many readings as a JSON list per line out."""
    import signal

    from harness.measure.canary import _readings

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in sys.stdin:
        print(json.dumps(_readings(int(line))), flush=True)


if __name__ == "__main__":
    _serve()
