"""Result records: one schema-versioned JSON file per sweep point, written atomically.

Data only; rendering lives elsewhere. ``load`` turns records into a pandas DataFrame, one row per point.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Iterable, Optional

SCHEMA_VERSION = 1
STATUSES = ("ok", "skipped", "failed", "timeout")
REFERENCE_DIR = "references"  # <results>/references holds gate references, not records


@dataclass
class Record:
    scenario: str
    point_id: str
    point: dict  # the point's axes
    status: str  # ok | skipped | failed | timeout
    reason: Optional[str] = None  # why skipped, or the error when failed
    settings: dict = field(default_factory=dict)  # model, generation, measurement as resolved
    model: dict = field(default_factory=dict)  # name, checksum, paths
    metrics: dict = field(default_factory=dict)
    units: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)  # raw per-round timings, so stats can be recomputed
    correctness: dict = field(default_factory=dict)  # the gate's result, when the scenario has a gate
    adapter: dict = field(default_factory=dict)  # adapter.describe()
    details: dict = field(default_factory=dict)  # generated text, traceback tail, ...
    environment: dict = field(default_factory=dict)
    scenario_path: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Record:
        data = migrate(dict(data))
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def migrate(data: dict) -> dict:
    """Upgrade an older record to the current schema (none exist yet: version 1 is the first)."""
    version = data.get("schema_version")
    if version is None or version > SCHEMA_VERSION:
        raise ValueError(f"unsupported record schema_version {version!r} (this harness reads <= {SCHEMA_VERSION})")
    return data


def safe_name(name: str) -> str:
    """A file-name-safe form of a scenario or point name; never a path that escapes its directory."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "unnamed"
    return cleaned[:200]


def record_path(results_dir: Path, record: Record) -> Path:
    return Path(results_dir) / safe_name(record.scenario) / f"{safe_name(record.point_id)}.json"


def write(record: Record, results_dir: str | Path) -> Path:
    """Write ``record`` atomically: a temporary file in the same directory, then ``os.replace``."""
    path = record_path(Path(results_dir), record)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record.to_dict(), out, indent=1, allow_nan=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(path: str | Path) -> Record:
    return Record.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _record_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():  # records only: the gate's reference store may live inside a results directory
            files += sorted(p for p in path.rglob("*.json") if not p.name.startswith(".")
                            and REFERENCE_DIR not in p.relative_to(path).parts)
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such results file or directory: {path}")
    return files


def load(paths: str | Path | Iterable[str | Path]):
    """Records under ``paths`` (files or directories) as a DataFrame: one row per point.

    Columns: scenario, point_id, status, reason, each axis, each metric, model name and checksum,
    adapter engine/version, and ``path``.
    """
    import pandas as pd

    if isinstance(paths, (str, Path)):
        paths = [paths]
    rows = []
    for file in _record_files(paths):
        record = read(file)
        row = {
            "scenario": record.scenario,
            "point_id": record.point_id,
            "status": record.status,
            "reason": record.reason,
            **record.point,
            **record.metrics,
            "gate_verdict": record.correctness.get("verdict"),
            "gate_kl_mean": record.correctness.get("kl_mean"),
            "gate_kl_ratio": record.correctness.get("kl_ratio"),
            "gate_top1_match_rate": record.correctness.get("top1_match_rate"),
            "gate_divergence_index": record.correctness.get("free_divergence_index"),
            "model": record.model.get("name"),
            "model_checksum": record.model.get("checksum"),
            "engine": record.adapter.get("engine"),
            "engine_version": record.adapter.get("engine_version"),
            "started_at": record.started_at,
            "path": str(file),
        }
        rows.append(row)
    return pd.DataFrame(rows)
