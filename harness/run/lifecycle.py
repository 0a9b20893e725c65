"""Process lifecycle: nothing a sweep starts outlives it, and an interrupted sweep ends cleanly.

- Front-ends turn SIGTERM, SIGINT and SIGHUP into ``Interrupted`` (``interruptible``); a second signal
  ends the process at once, the default way. ``shielded`` defers these signals over the few lines that
  start a child or kill it, so no signal lands between the two.
- The parent kills each point's process group on every exit path (``harness.run.launchers.worker_process``). If the
  parent dies without doing so (kill -9), the worker's reaper (``die_with_parent``) sees the parent's
  end of a pipe close and kills the group: the worker and every helper its engine started.
- Leftovers of killed runs (work folders of dead processes, temporary files of interrupted atomic
  writes) are swept at the next start (``sweep_stale``).

Standard library only: every layer may use it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
WORK_PREFIX = "harness-point-"
STALE_TEMP_AGE_S = 60.0  # an atomic write takes milliseconds; an older temporary file has no writer left
# The temporary names of harness.io.write_json_atomic: ".<name>.json.<8 random characters>.tmp".
_ATOMIC_TEMP = re.compile(r"^\..+\.json\.[a-z0-9_]{8}\.tmp$")


class Interrupted(KeyboardInterrupt):
    """The process received ``signum``; ``done`` of ``total`` points had their complete records written when
    the runner knew them (``None``: the sweep had not started), and ``incomplete`` more had a record of only
    some of their launches (status ``incomplete``: no reader takes it for a finished point)."""

    def __init__(self, signum: int, done: Optional[int] = None, total: Optional[int] = None, incomplete: int = 0):
        super().__init__(signum)
        self.signum, self.done, self.total, self.incomplete = signum, done, total, incomplete

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process ended by this signal


def summary(exc: Interrupted, results_dir: Optional[Path] = None) -> str:
    """The one line printed when a sweep is interrupted."""
    if exc.done is None:
        return f"interrupted by {exc.signal_name} before any point ran"
    line = f"interrupted by {exc.signal_name} after {exc.done} of {exc.total} points"
    if exc.incomplete:
        line += f" ({exc.incomplete} more recorded as incomplete)"
    if results_dir is not None:
        line += f"; records in {results_dir}/; resume with --resume"
    return line


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGTERM, SIGINT and SIGHUP raise ``Interrupted`` in the main thread (so
    ``finally`` blocks run and children are killed); a second one ends the process at once."""
    if not _main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum, frame):
        if received:  # asked twice: stop now; the workers' reapers still kill their groups
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        received.append(signum)
        raise Interrupted(signum)

    previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextmanager
def shielded() -> Iterator[None]:
    """Defer SIGTERM, SIGINT and SIGHUP until the block ends, then deliver them to whatever handler was
    in place (ours, pytest's, or the default one)."""
    if not _main_thread():
        yield
        return
    pending: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: pending.append(signum)) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group (a point's worker, its reaper, its engine's helpers)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def die_with_parent(watch_fd: int) -> None:
    """In a worker (the leader of its own process group): fork a reaper that blocks on the read end of a
    pipe whose write end only the parent holds. When the parent ends, however it ends, the read returns
    and the reaper kills the whole group. A separate process, so an engine that holds the GIL or hangs
    in native code cannot stop it."""
    if os.fork() == 0:
        try:
            # Only the watch pipe: a reaper holding, say, the worker's reply pipe would hide the worker's death.
            os.closerange(3, watch_fd)
            os.closerange(watch_fd + 1, os.sysconf("SC_OPEN_MAX"))
            while True:
                try:
                    if not os.read(watch_fd, 64):
                        break
                except InterruptedError:
                    continue
            os.killpg(os.getpgrp(), signal.SIGKILL)
        finally:
            os._exit(0)
    os.close(watch_fd)


def work_prefix() -> str:
    """Prefix of this process's per-point work folders: the owner's PID lets a later start sweep them."""
    return f"{WORK_PREFIX}{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def sweep_stale(results_dir: Optional[Path] = None, temp_dir: Optional[Path] = None) -> list[Path]:
    """Remove what killed runs left behind: work folders ``harness-point-<pid>-*`` (ours, in the temporary
    directory) whose owner is dead, and temporary files of atomic writes under ``results_dir`` older than
    ``STALE_TEMP_AGE_S`` (a younger one may belong to a concurrent writer). Returns what was removed."""
    removed = []
    temp_dir = Path(temp_dir or tempfile.gettempdir())
    for path in temp_dir.glob(f"{WORK_PREFIX}*-*"):
        owner = path.name[len(WORK_PREFIX) :].split("-", 1)[0]
        try:
            mine = path.lstat().st_uid == os.getuid()
        except OSError:
            continue
        if owner.isdigit() and mine and not _alive(int(owner)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if results_dir is not None and Path(results_dir).is_dir():
        removed += _sweep_temp_files(Path(results_dir))
    return removed


def _sweep_temp_files(root: Path, depth: int = 4) -> list[Path]:
    removed = []
    cutoff = time.time() - STALE_TEMP_AGE_S
    for folder, dirs, files in os.walk(root):
        if len(Path(folder).relative_to(root).parts) >= depth:
            dirs[:] = []  # records and references lie a few levels down; never walk a whole tree
        for name in files:
            path = Path(folder) / name
            try:
                if _ATOMIC_TEMP.match(name) and path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(path)
            except OSError:
                continue  # its writer finished (renamed or removed it) meanwhile
    return removed
