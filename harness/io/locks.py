"""Locks: a file computed once by whichever of several runners gets there first, and the lock that keeps a
second sweep out of a results directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from harness.errors import UsageError, WriteFailed


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<path>.lock`` beside ``path``; other processes wait. Without fcntl
    (Windows) there is no lock: the atomic write still keeps readers from half files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def compute_once(
    path: str | Path,
    read: Callable[[Path], Optional[Any]],
    compute: Callable[[], Any],
    write: Callable[[Path, Any], object],
    refresh: bool = False,
) -> tuple[Any, bool]:
    """(value, reused): ``read(path)`` when it gives a value, otherwise ``compute()`` then ``write`` it,
    under ``locked(path)`` so concurrent runners compute it once and the others wait and read it. A failed
    write (or lock) is ``WriteFailed`` naming the file."""
    path = Path(path)
    if not refresh:
        found = read(path)  # the common case needs no lock
        if found is not None:
            return found, True
    # A store that cannot be written (a full disk, a read-only --reference-dir) is a ``WriteFailed`` naming
    # the file, from taking the lock beside it or from the write; an OSError of ``compute`` stays its own.
    lock = contextlib.ExitStack()
    try:
        lock.enter_context(locked(path))
    except OSError as exc:
        raise WriteFailed.from_os_error(exc, path) from None
    with lock:
        if not refresh:
            found = read(path)  # another runner finished it while this one waited
            if found is not None:
                return found, True
        value = compute()
        try:
            write(path, value)
        except OSError as exc:
            raise WriteFailed.from_os_error(exc, path) from None
        return value, False


RUN_LOCK = ".harness-run.lock"  # in a results directory while a sweep writes into it


@contextlib.contextmanager
def results_lock(results_dir: str | Path, what: str = "--results") -> Iterator[None]:
    """Hold ``results_dir`` for one sweep: a second concurrent run into it is refused, naming the holder's
    PID (two sweeps interleaving their records and resume state would leave neither complete). The lock
    is the kernel's (flock), so a killed holder releases it; the file stays, with the last holder's PID."""
    import fcntl

    directory = Path(results_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RUN_LOCK
    try:  # the first write into the directory: a read-only file system is found here, before any point
        handle = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise WriteFailed.from_os_error(exc, path) from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 64, 0).decode(errors="replace").strip() or "unknown"
            raise UsageError(
                f"{what} {directory}: another harness run (PID {holder}) is writing there; wait for it to "
                f"finish, or give this run another {what}"
            ) from None
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(handle)  # closing releases the flock
