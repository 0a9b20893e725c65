"""One atomic JSON write for every store (records, references, baselines, shard merges, the roofline
cache), the strict JSON read that names a non-finite value's field, and output-path checks made before
anything runs. The locks (``locks.py``: a shared file computed once, the results-directory lock) and the
file hash (``hashing.py``) have their own modules, re-exported here."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.errors import UsageError
from harness.io.hashing import file_sha256, per_file  # noqa: F401 - re-exported
from harness.io.locks import RUN_LOCK, compute_once, locked, results_lock  # noqa: F401 - re-exported


def _umask() -> int:
    try:  # Linux reports it without changing it (os.umask would, briefly, for every thread)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable; some file systems cannot open a directory, and that is not an error."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json_atomic(path: str | Path, data, *, indent: int | None = 1) -> Path:
    """Write ``data`` as strict JSON (NaN and infinity refused) to ``path`` atomically (``write_atomic``)."""

    def dump(out) -> None:
        out.write(json.dumps(data, indent=indent, allow_nan=False).encode("utf-8") + b"\n")

    return write_atomic(path, dump)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (``write_atomic``): reports, exports, history exports."""
    return write_atomic(path, lambda out: out.write(data))


def write_atomic(path: str | Path, write: Callable[[Any], object]) -> Path:
    """Call ``write`` on a binary file so that readers of ``path`` see the old file or the new one, never
    half of one: a uniquely named temporary file in the same directory, flushed to disk, then
    ``os.replace`` and a sync of the directory. The file gets the mode any tool would create (0666 less
    the umask; ``mkstemp`` alone makes 0600). The temporary file is removed if anything fails, and an
    ``OSError`` names ``path`` (a failed write on an open file names no file; the temporary one means
    nothing to a user), so ``harness.errors.writing`` can say which file could not be written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            write(out)
            out.flush()
            os.fchmod(out.fileno(), 0o666 & ~_umask())
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename2 is None:
            exc.filename = str(path)
        raise
    _fsync_dir(path.parent)
    return path


def make_dir_like_mkdir(path: Path) -> None:
    """Give a directory made by ``tempfile.mkdtemp`` (0700) the mode ``mkdir`` would (0777 less the umask)."""
    os.chmod(path, 0o777 & ~_umask())


def nonfinite_paths(data: Any, prefix: str = "") -> list[tuple[str, float]]:
    """(dotted field, value) for every NaN or infinity in parsed JSON."""
    if isinstance(data, float):
        return [] if math.isfinite(data) else [(prefix or "(top level)", data)]
    items: Iterable[tuple[Any, Any]]
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return []
    found = []
    for key, value in items:
        found += nonfinite_paths(value, f"{prefix}.{key}" if prefix else str(key))
    return found


# Folders the harness keeps inside a results directory for its own stores: no scenario may take one of
# these names, or its records would land in a store that every reader passes over.
STORE_NAMES = ("references",)
REFERENCE_DIR = STORE_NAMES[0]  # <results>/references holds gate references, not records

# Records, baselines and benchmark JSON arrive from other runners as CI artefacts: read them bounded.
MAX_JSON_BYTES = 256 * 2**20  # a pytest-benchmark JSON of a large nightly is tens of MiB; a record far less


def _refuse_unbounded(info: os.stat_result, path: str | Path, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a pipe, socket or device"
        raise ValueError(f"{path}: {kind}, not a regular file; give a file")
    if info.st_size > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes, the limit for this kind of file")


def check_regular_file(path: str | Path, limit: int) -> int:
    """The size of ``path`` (a symlink is followed), refused as ``read_regular_file`` would refuse it,
    without opening it: for files another library reads (a tokenizer, weights) after this check."""
    info = os.stat(path)
    _refuse_unbounded(info, path, limit)
    return info.st_size


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path``, which must be a regular file (a symlink to one is fine) of at most ``limit``
    bytes: a FIFO, a device such as /dev/zero, a directory or a larger file is a ValueError naming the
    path, at once, never a hang or an unbounded read. An unreadable path raises the OSError."""
    # O_NONBLOCK: opening a FIFO with no writer would otherwise block forever before fstat could refuse it.
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _refuse_unbounded(os.fstat(handle), path, limit)
        too_large = f"{path}: larger than {limit:,} bytes, the limit for this kind of file"
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(handle, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # it grew while we read
            raise ValueError(too_large)
        return b"".join(chunks)
    finally:
        os.close(handle)


def read_json(path: str | Path, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON in ``path``, strictly: not a regular file, over ``limit`` bytes, unreadable text, bad JSON,
    nesting too deep to parse and NaN/Infinity (which Python's reader accepts) are a ValueError naming the
    file, and the field for a non-finite number."""
    try:
        data = json.loads(read_regular_file(path, limit).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON file ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to read (records are a few levels deep)") from None
    bad = nonfinite_paths(data)
    if bad:
        field, value = bad[0]
        raise ValueError(
            f"{path}: {field}: non-finite number {value} (records are strict JSON; NaN and Infinity are not values)"
        )
    return data


# -- output paths, checked before anything runs -------------------------------------------------------


def first_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable_dir(path: str | Path, what: str) -> Path:
    """Refuse, naming ``what`` (the option) and the path, a directory that cannot be created or written:
    an existing file, a parent that is a file, a directory without write permission."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what} {path}: is a file, not a directory")
    existing = first_existing(path)
    if not existing.is_dir():
        raise UsageError(f"{what} {path}: cannot create it, {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: {existing} is not writable")
    return path


def check_own_dir(path: str | Path, what: str, marker: str, replace_option: str) -> Path:
    """``check_writable_dir``, and refuse a non-empty directory that holds no ``marker`` (the file a
    command leaves in every directory it writes): writing there would overwrite or mix with files it did
    not write (``report -o /`` as root wrote into ``/``). Its own earlier output, or an empty or new
    directory, is fine; the caller skips this check when the user gave ``replace_option``."""
    path = check_writable_dir(path, what)
    if path.is_dir() and not (path / marker).exists() and any(path.iterdir()):
        raise UsageError(
            f"{what} {path}: not empty and holds no {marker}, so this command did not write it; "
            f"give a new or empty directory, or add {replace_option} to write into it anyway"
        )
    return path


def check_writable_file(path: str | Path, what: str) -> Path:
    """Refuse, naming ``what`` and the path, a file that cannot be written: a directory, a read-only file,
    or a parent directory that cannot be created or written."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a directory, not a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: is not writable")
    check_writable_dir(path.parent, what)
    return path


def safe_name(name: str) -> str:
    """A file-name-safe form of a scenario or point name; never a path that escapes its directory."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "unnamed"
    return cleaned[:200]
