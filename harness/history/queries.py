"""Reading the history back: runs in order, series with their values, one table for export."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from harness.history.ingest import ExcludedLaunch, FingerprintKey


@dataclass(frozen=True)
class RunInfo:
    id: int
    position: int  # 0 = oldest run in the history
    started_at: datetime
    commit: Optional[str]
    host: Optional[str]
    source: Optional[str]
    n_points: int

    def label(self) -> str:
        commit = (self.commit or "no commit")[:12]
        return f"run #{self.id} ({self.started_at:%Y-%m-%d %H:%M}, commit {commit})"


@dataclass
class SeriesData:
    """One series: values in run order, with the runs they came from (and, on request, spreads). A value is
    the run's figure over the launches the regression check counts (``Measurement.counted_value`` where a
    launch was excluded as disturbed, else ``Measurement.value``), so change points leave those out too."""

    id: int
    scenario: str
    point_id: str
    metric: str
    fingerprint: FingerprintKey
    runs: list[RunInfo] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    spread: list[tuple[Optional[float], Optional[float]]] = field(default_factory=list)  # low, high per run
    spread_over: list[Optional[str]] = field(default_factory=list)  # what each spread is: launches | rounds | interval
    verdicts: list[Optional[str]] = field(default_factory=list)
    excluded: list[tuple[ExcludedLaunch, ...]] = field(default_factory=list)  # per run: launches left out
    recorded: list[float] = field(default_factory=list)  # per run: the record's figure, over every launch

    @property
    def point(self) -> str:
        return f"{self.scenario}::{self.point_id}"


def runs(engine) -> list[RunInfo]:
    """Every run, oldest first (by start time, then by the order they were added)."""
    from sqlalchemy import select

    from harness.history.orm import Run

    with engine.connect() as connection:
        rows = connection.execute(
            select(Run.id, Run.started_at, Run.commit, Run.host, Run.source, Run.n_points).order_by(
                Run.started_at, Run.id
            )
        ).all()
    return [RunInfo(r.id, i, r.started_at, r.commit, r.host, r.source, r.n_points) for i, r in enumerate(rows)]


def _spread(rounds, launches, low, high) -> tuple[Optional[float], Optional[float], Optional[str]]:
    """(low, high, source): the launch-to-launch range when there are launches, else the rounds' range,
    else the interval; the source says which, so a reader can tell launch spread from round spread."""
    for source, sample in (("launches", launches), ("rounds", rounds)):
        if sample and len(sample) > 1:
            return min(sample), max(sample), source
    if low is not None and high is not None:
        return low, high, "interval"
    return None, None, None


def series(
    engine,
    scenario: Optional[str] = None,
    point_id: Optional[str] = None,
    metric: Optional[str] = None,
    spread: bool = False,
) -> list[SeriesData]:
    """Series (optionally of one point or metric) with their values in run order. ``spread`` also reads
    the per-round/per-launch values and the correctness verdicts (slower: JSON columns)."""
    from sqlalchemy import func, select

    from harness.history.orm import Fingerprint, Measurement, PointResult, Series

    order = {run.id: run for run in runs(engine)}
    where = [
        c == v
        for c, v in ((Series.scenario, scenario), (Series.point_id, point_id), (Series.metric, metric))
        if v is not None
    ]
    with engine.connect() as connection:
        found = {}
        for row in connection.execute(
            select(
                Series.id,
                Series.scenario,
                Series.point_id,
                Series.metric,
                Fingerprint.host,
                Fingerprint.device,
                Fingerprint.driver,
                Fingerprint.engine,
                Fingerprint.engine_version,
            )
            .join(Fingerprint, Series.fingerprint_id == Fingerprint.id)
            .where(*where)
        ):
            found[row[0]] = SeriesData(row[0], row[1], row[2], row[3], FingerprintKey(*row[4:]))
        columns = [
            Measurement.series_id,
            PointResult.run_id,
            func.coalesce(Measurement.counted_value, Measurement.value),
        ]
        if spread:
            columns += [
                Measurement.rounds,
                Measurement.launches,
                Measurement.ci_low,
                Measurement.ci_high,
                PointResult.verdict,
                PointResult.excluded_launches,
                Measurement.value,
            ]
        query = select(*columns).join(PointResult, Measurement.result_id == PointResult.id)
        if where:
            query = query.join(Series, Measurement.series_id == Series.id).where(*where)
        rows = connection.execute(query).all()
    rows.sort(key=lambda r: (r[0], order[r[1]].position))
    for row in rows:
        data = found[row[0]]
        if row[2] is None:
            continue
        data.runs.append(order[row[1]])
        data.values.append(row[2])
        if spread:
            low, high, source = _spread(*row[3:7])
            data.spread.append((low, high))
            data.spread_over.append(source)
            data.verdicts.append(row[7])
            data.excluded.append(tuple(ExcludedLaunch(**entry) for entry in row[8] or ()))
            data.recorded.append(row[9])
    return [s for s in found.values() if s.values]


def frame(engine):
    """One row per stored value (run, point, fingerprint, metric, value and its spread), for pandas."""
    import pandas as pd
    from sqlalchemy import select

    from harness.history.orm import Fingerprint, Measurement, PointResult, Run, Series

    query = (
        select(
            Run.id.label("run_id"),
            Run.started_at,
            Run.commit,
            PointResult.scenario,
            PointResult.point_id,
            Series.metric,
            Measurement.value,
            Measurement.rounds,
            Measurement.launches,
            Measurement.ci_low,
            Measurement.ci_high,
            Measurement.counted_value,
            PointResult.excluded_launches,
            PointResult.status,
            PointResult.verdict,
            PointResult.kl_ratio,
            Fingerprint.host,
            Fingerprint.device,
            Fingerprint.driver,
            Fingerprint.engine,
            Fingerprint.engine_version,
            Fingerprint.hash.label("fingerprint"),
        )
        .join(PointResult, Measurement.result_id == PointResult.id)
        .join(Run, PointResult.run_id == Run.id)
        .join(Series, Measurement.series_id == Series.id)
        .join(Fingerprint, Series.fingerprint_id == Fingerprint.id)
        .order_by(Run.started_at, Run.id, PointResult.scenario, PointResult.point_id, Series.metric)
    )
    with engine.connect() as connection:
        result = connection.execute(query)
        return pd.DataFrame(result.all(), columns=list(result.keys()))


def point_outcomes(engine, scenario: str, point_id: str) -> list[tuple[RunInfo, str, Optional[str], Optional[float]]]:
    """(run, status, verdict, KL ratio) of one point in every run that has it, oldest first."""
    from sqlalchemy import select

    from harness.history.orm import PointResult

    order = {run.id: run for run in runs(engine)}
    with engine.connect() as connection:
        rows = connection.execute(
            select(PointResult.run_id, PointResult.status, PointResult.verdict, PointResult.kl_ratio).where(
                PointResult.scenario == scenario, PointResult.point_id == point_id
            )
        ).all()
    return sorted(((order[r[0]], r[1], r[2], r[3]) for r in rows), key=lambda o: o[0].position)


def verdict_changes(engine) -> set[tuple[str, str]]:
    """(scenario, point_id) of the points whose correctness verdict was not the same in every run."""
    from sqlalchemy import func, select

    from harness.history.orm import PointResult

    with engine.connect() as connection:
        rows = connection.execute(
            select(PointResult.scenario, PointResult.point_id)
            .group_by(PointResult.scenario, PointResult.point_id, PointResult.fingerprint_id)
            .having(func.count(func.distinct(func.coalesce(PointResult.verdict, "-"))) > 1)
        ).all()
    return {(r[0], r[1]) for r in rows}
