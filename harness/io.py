"""One atomic JSON write for every store: records, references, baselines, shard merges, the roofline cache."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_json_atomic(path: str | Path, data, *, indent: int | None = 1) -> Path:
    """Write ``data`` as strict JSON (NaN and infinity refused) to ``path`` so readers see the old
    file or the new one, never half of one: a uniquely named temporary file in the same directory,
    flushed to disk, then ``os.replace``. The temporary file is removed if anything fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=indent, allow_nan=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
