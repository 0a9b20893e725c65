"""Records -> typed rows for the history. Every read of a record's fields is in ``_rows``, so a change
of the record's shape is adapted in one place; the rest of the package sees only these dataclasses."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Optional


@dataclass(frozen=True)
class FingerprintKey:
    """The hardware/software a series was measured on; a change here starts a new series."""

    host: Optional[str]
    device: Optional[str]
    driver: Optional[str]
    engine: Optional[str]
    engine_version: Optional[str]

    @property
    def hash(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32]

    def label(self) -> str:
        return " ".join(str(v) for v in (self.host, self.device, self.engine, self.engine_version, self.driver) if v)


@dataclass(frozen=True)
class ValueRow:
    metric: str
    value: float  # the record's figure: over every ok launch, excluded ones too
    rounds: Optional[list[float]] = None  # per-round values, the spread inside one launch
    launches: Optional[list[float]] = None  # per-launch values, when the record holds several launches
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    # The median over the launches the regression check counts (``records.record.launch_values``), where
    # that leaves a launch excluded as disturbed out; None: every launch counted, ``value`` is the figure.
    counted_value: Optional[float] = None


@dataclass(frozen=True)
class ExcludedLaunch:
    """A launch kept in the record but left out of the regression check as disturbed (``Launch.excluded``)."""

    index: int  # 0-based, as in the record
    of: int  # the record's launches
    reason: str

    def label(self) -> str:
        return f"launch {self.index + 1}/{self.of}: {self.reason}"


@dataclass(frozen=True)
class PointRows:
    """One record, as the history stores it."""

    scenario: str
    point_id: str
    fingerprint: FingerprintKey
    status: str
    reason: Optional[str] = None
    verdict: Optional[str] = None  # correctness gate: pass | drift | fail | not judged | None (no gate)
    kl_ratio: Optional[float] = None
    accuracy: Optional[dict[str, Any]] = None
    started_at: Optional[datetime] = None
    commit: Optional[str] = None
    values: tuple[ValueRow, ...] = ()
    excluded: tuple[ExcludedLaunch, ...] = ()


@dataclass(frozen=True)
class RunRows:
    """The records of one run (one RESULTS argument of ``history add``)."""

    content_hash: str
    commit: Optional[str]
    started_at: datetime
    host: Optional[str]
    source: str
    points: tuple[PointRows, ...] = field(default_factory=tuple)


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _floats(values: Any) -> Optional[list[float]]:
    if not values:
        return None
    out = [v for v in map(_finite, values) if v is not None]
    return out or None


def _time(text: Any) -> Optional[datetime]:
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _rows(record) -> PointRows:
    """The one place that reads a record (``harness.records.record.Record``): identity, fingerprint, outcome,
    and each numeric metric with its per-round values (``results.round_values``), per-launch values (the
    ok launches' medians in ``samples.launches``, when there are several) and its interval over launches
    (``samples.intervals``) when the record carries them; the launches excluded as disturbed, and each
    launch-level metric's median over the launches the regression check counts where that differs."""
    import statistics

    from harness.records.columns import round_values
    from harness.records.record import launch_values

    engine, env, point = record.engine, record.environment or {}, record.point or {}
    device = engine.device or point.get("device")
    name = engine.device_name
    fingerprint = FingerprintKey(
        host=env.get("hostname"),
        device=f"{device} ({name})" if device and name else (device or name),
        driver=engine.driver,  # harness.adapters.drivers, through each adapter's describe()
        engine=engine.name or point.get("adapter"),
        engine_version=engine.version,
    )
    rounds = round_values(record) if record.status == "ok" else {}
    launches = [entry for entry in record.samples.launches if entry.status == "ok"]
    values = []
    for metric, raw in sorted(record.metrics.items()):
        value = _finite(raw)
        if value is None:
            continue
        interval = record.samples.intervals.get(metric)
        measured = [entry for entry in launches if entry.medians.get(metric) is not None]
        counted = launch_values(record, metric) if len(measured) > 1 else []
        values.append(
            ValueRow(
                metric,
                value,
                _floats(rounds.get(metric)),
                _floats([entry.medians.get(metric) for entry in launches]) if len(launches) > 1 else None,
                _finite(interval.low) if interval else None,
                _finite(interval.high) if interval else None,
                _finite(statistics.median(counted)) if 0 < len(counted) < len(measured) else None,
            )
        )
    gate = record.correctness
    return PointRows(
        scenario=record.scenario,
        point_id=record.point_id,
        fingerprint=fingerprint,
        status=record.status,
        reason=record.reason,
        verdict=gate.verdict if gate else None,
        kl_ratio=_finite(gate.kl_ratio) if gate else None,
        # Per-item outcomes stay in the record files: history keeps scores, deltas and paired verdicts.
        accuracy=record.accuracy.model_dump(mode="json", exclude_none=True, exclude={"outcomes", "reference_outcomes"})
        if record.accuracy
        else None,
        started_at=_time(record.started_at),
        commit=(env.get("git") or {}).get("commit"),
        values=tuple(values),
        excluded=tuple(
            ExcludedLaunch(entry.index, len(record.samples.launches), entry.excluded)
            for entry in record.samples.launches
            if entry.excluded
        ),
    )


def _canonical(point: PointRows) -> str:
    """A point as its content hash reads it. Fields added since the history's first schema are left out
    while empty, so records stored by an older harness hash the same and are not stored twice."""
    data = asdict(point)
    if not data["excluded"]:
        del data["excluded"]
    for value in data["values"]:
        if value["counted_value"] is None:
            del value["counted_value"]
    return json.dumps(data, sort_keys=True, default=str)


def _digest(points: Iterable[PointRows]) -> str:
    """Content hash of a run: its points in a canonical order, so the same records hash the same
    whichever order or path they were read in."""
    canonical = sorted(_canonical(p) for p in points)
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


def run_rows(points: list[PointRows], source: str, commit: Optional[str] = None) -> RunRows:
    """A run from its points: the commit given, else the records' most common one; the earliest start."""
    if not points:
        raise ValueError(f"{source}: no result records")
    commits = Counter(p.commit for p in points if p.commit)
    hosts = Counter(p.fingerprint.host for p in points if p.fingerprint.host)
    starts = [p.started_at for p in points if p.started_at]
    return RunRows(
        content_hash=_digest(points),
        commit=commit or (commits.most_common(1)[0][0] if commits else None),
        started_at=min(starts) if starts else datetime.now(timezone.utc),
        host=hosts.most_common(1)[0][0] if hosts else None,
        source=source,
        points=tuple(points),
    )


def read_run(path: str | Path, commit: Optional[str] = None) -> RunRows:
    """The records under ``path`` (a results directory, a record file or a pytest-benchmark JSON) as one run.
    A point recorded twice keeps its later record; one with a run record and a gate-only one (``harness verify``)
    keeps the run's (``timing_view``), and a gate-only record alone stores its verdict with no timing series."""
    from harness.records.store import iter_records, timing_view

    latest: dict[tuple, PointRows] = {}
    for _, record in timing_view(iter_records([path])):
        rows = _rows(record)
        key = (rows.scenario, rows.point_id, rows.fingerprint)
        old = latest.get(key)
        if old is None or (rows.started_at or datetime.min.replace(tzinfo=timezone.utc)) >= (
            old.started_at or datetime.min.replace(tzinfo=timezone.utc)
        ):
            latest[key] = rows
    return run_rows(list(latest.values()), str(path), commit)
