"""Named baselines: a frozen copy of result records that later runs are compared and checked against.

A baseline is a directory ``<baselines>/<name>/`` holding the records (same layout as a results
directory) and ``baseline.json`` describing where they came from.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from harness.errors import UsageError, writing
from harness.io import make_dir_like_mkdir, safe_name, write_json_atomic
from harness.records import store
from harness.records.record import STATUSES, Record

MANIFEST = "baseline.json"
DEFAULT_DIR = Path("baselines")


def _check_name(name: str) -> None:
    if not name or safe_name(name) != name:
        raise UsageError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-' only")


def save(sources: Iterable[str | Path], name: str, baselines_dir: Path = DEFAULT_DIR, replace: bool = False) -> Path:
    """Copy the records under ``sources`` into a new baseline; returns its directory.

    The copy is assembled beside the target and renamed into place, so a failed save leaves any
    previous baseline of that name untouched.
    """
    _check_name(name)
    sources = [Path(s) for s in sources]
    pairs = list(store.iter_records(sources))
    if not pairs:
        raise UsageError(f"no result records under {', '.join(map(str, sources))}")
    from harness.regression.check import index

    index((record for _, record in pairs), "records to save")  # refuse duplicate points
    target = Path(baselines_dir) / name
    if target.exists() and not replace:
        raise UsageError(f"baseline {name!r} already exists at {target}; pass --replace to overwrite it")
    kept = f"baseline {name!r} not saved" + ("; its previous version is unchanged" if target.exists() else "")
    with writing(target.parent, kept=kept):
        _write(pairs, sources, name, target)
    return target


def _write(pairs: list, sources: Iterable[str | Path], name: str, target: Path) -> None:
    """The records and the manifest into a staging directory beside ``target``, renamed into its place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    old = target.with_name(f".{name}.old")
    try:
        make_dir_like_mkdir(staging)  # mkdtemp's 0700 would hide a shared baseline from the team
        for _, record in pairs:
            store.write(record, staging)
        manifest = {
            "kind": "harness-baseline",
            "name": name,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "sources": [str(s) for s in sources],
            "points": len(pairs),
            "statuses": {s: sum(r.status == s for _, r in pairs) for s in STATUSES},
        }
        write_json_atomic(staging / MANIFEST, manifest)
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            try:
                staging.rename(target)
            except BaseException:
                old.rename(target)  # the previous baseline goes back where it was
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def resolve(name_or_path: str, baselines_dir: Path = DEFAULT_DIR) -> Path:
    """A baseline name under ``baselines_dir``, or a path to records (a results directory, a record or
    pytest-benchmark JSON file, another baseline's directory)."""
    named = Path(baselines_dir) / name_or_path
    if safe_name(name_or_path) == name_or_path and (named / MANIFEST).exists():
        return named
    if Path(name_or_path).exists():
        return Path(name_or_path)
    known = sorted(p.parent.name for p in Path(baselines_dir).glob(f"*/{MANIFEST}"))
    hint = f"saved baselines in {baselines_dir}: {', '.join(known)}" if known else f"none saved in {baselines_dir}"
    raise UsageError(
        f"no baseline {name_or_path!r} ({hint}); save one with `harness baseline save RESULTS --name {name_or_path}`"
    )


def load(name_or_path: str, baselines_dir: Path = DEFAULT_DIR) -> list[Record]:
    return [record for _, record in store.iter_records(resolve(name_or_path, baselines_dir))]
