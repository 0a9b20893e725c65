"""Reads remembered per file version, and the sha256 of a file's bytes built on them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable


def per_file(read: Callable[[Path], Any], entries: int = 8) -> Callable[[str | Path], Any]:
    """``read(path)`` remembered per file version (path, size, modification time): a sweep's points (and
    a persistent worker's) parse a tokenizer or a weights header once, yet a rewritten file is read again.
    For results that callers do not change."""
    from functools import lru_cache

    @lru_cache(maxsize=entries)
    def cached(path: str, size: int, mtime_ns: int):
        return read(Path(path))

    def load(path: str | Path):
        stat = Path(path).stat()
        return cached(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)

    load.cache_clear = cached.cache_clear  # type: ignore[attr-defined]  # the lru_cache handle, for tests
    return load


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# sha256 of a file's bytes, streamed; hashed again only when its size or modification time changes.
# What keys every stored reference by the content of the weights it was computed from.
file_sha256 = per_file(_sha256, entries=64)
