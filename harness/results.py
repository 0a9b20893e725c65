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
from typing import Iterable, Iterator, Optional

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
    accuracy: dict = field(default_factory=dict)  # lm-eval task scores, the reference's, and the deltas
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


def _json_files(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for every JSON file under ``paths``."""
    files: list[tuple[Path, bool]] = []
    for path in map(Path, paths):
        if path.is_dir():  # records only: the gate's reference store may live inside a results directory
            files += [(p, False) for p in sorted(path.rglob("*.json")) if not p.name.startswith(".")
                      and REFERENCE_DIR not in p.relative_to(path).parts]
        elif path.exists():
            files.append((path, True))
        else:
            raise FileNotFoundError(f"no such results file or directory: {path}")
    return files


def iter_records(paths: str | Path | Iterable[str | Path]) -> Iterator[tuple[Path, Record]]:
    """(file, record) for the result records under ``paths``: record files, directories of them, and
    pytest-benchmark JSON files written by the harness plugin (one record per benchmark).

    Other JSON files found while walking a directory (a baseline's manifest, unrelated JSON) are passed
    over; a file named explicitly that holds no records is an error naming it.
    """
    from harness import benchmark_json

    if isinstance(paths, (str, Path)):
        paths = [paths]
    for file, explicit in _json_files(paths):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{file}: not a readable JSON file ({exc})") from None
        if isinstance(data, dict) and "point_id" in data and "schema_version" in data:
            try:
                yield file, Record.from_dict(data)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{file}: {exc}") from None
        elif benchmark_json.is_benchmark_json(data):
            for record in benchmark_json.records(data, source=file):
                yield file, record
        elif explicit:
            raise ValueError(f"{file}: neither a harness result record nor a pytest-benchmark JSON "
                             "file written with the harness plugin")


def round_values(record: Record) -> dict[str, list[float]]:
    """Per-round TTFT, ms/token and end-to-end figures (ms): the spread a regression must exceed."""
    if "rounds_ms" in record.samples:  # records rebuilt from pytest-benchmark JSON keep only these
        return record.samples["rounds_ms"]
    rounds = record.samples.get("rounds") or []
    out: dict[str, list[float]] = {"ttft_ms": [], "tpot_ms": [], "e2e_ms": []}
    for r in rounds:
        out["ttft_ms"].append(r["ttft_s"] * 1e3)
        out["e2e_ms"].append(r["e2e_s"] * 1e3)
        if r["gaps_s"]:
            out["tpot_ms"].append((r["e2e_s"] - r["ttft_s"]) / len(r["gaps_s"]) * 1e3)
    return out


def row(record: Record, path: Optional[Path] = None) -> dict:
    """One flat row for a record: identity, axes, metrics, gate summary, provenance."""
    gate = record.correctness
    return {
        "scenario": record.scenario,
        "point_id": record.point_id,
        "status": record.status,
        "reason": record.reason,
        **record.point,
        **record.metrics,
        "gate_verdict": gate.get("verdict"),
        "gate_k": gate.get("k"),
        "gate_mode": gate.get("mode"),
        "gate_kl_mean": gate.get("kl_mean"),
        "gate_kl_ratio": gate.get("kl_ratio"),
        "gate_top1_match_rate": gate.get("top1_match_rate"),
        "gate_divergence_index": gate.get("free_divergence_index"),
        "gate_skipped": gate.get("skipped"),
        "gate_reasons": "; ".join(gate.get("reasons") or []) or None,
        **accuracy_columns(record.accuracy),
        "model": record.model.get("name"),
        "model_checksum": record.model.get("checksum"),
        "engine": record.adapter.get("engine"),
        "engine_version": record.adapter.get("engine_version"),
        "emulated": bool(record.adapter.get("emulated")),
        "host": record.environment.get("hostname"),
        "started_at": record.started_at,
        "path": None if path is None else str(path),
    }


def accuracy_columns(accuracy: dict) -> dict:
    """``accuracy.<task>.<metric>`` (+ ``.stderr`` and ``.delta``) for every scored metric."""
    out = {}
    for task, metrics in (accuracy.get("tasks") or {}).items():
        deltas = (accuracy.get("delta") or {}).get(task, {})
        for metric, value in metrics.items():
            if metric.endswith("_stderr") or metric == "items":
                continue
            out[f"accuracy.{task}.{metric}"] = value
            out[f"accuracy.{task}.{metric}.stderr"] = metrics.get(f"{metric}_stderr")
            out[f"accuracy.{task}.{metric}.delta"] = deltas.get(metric)
    return out


def frame(pairs: Iterable[tuple[Optional[Path], Record]]):
    """A DataFrame with one ``row`` per (path, record) pair."""
    import pandas as pd

    return pd.DataFrame([row(record, path) for path, record in pairs])


def load(paths: str | Path | Iterable[str | Path]):
    """Records under ``paths`` (files or directories) as a DataFrame: one row per point.

    Columns: scenario, point_id, status, reason, each axis, each metric, the gate's summary
    (``gate_*``), model name and checksum, engine and version, host, and ``path``.
    """
    return frame(iter_records(paths))
