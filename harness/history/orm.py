"""The history's tables (SQLAlchemy 2 ORM). Alembic migrations in ``migrations/`` create and evolve them;
a change here needs a new revision there (``alembic revision --autogenerate`` against a current DB).

runs ─< point_results ─< measurements >─ series >─ fingerprints
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Fingerprint(Base):
    """Where a series was measured; ``hash`` covers every other column, so equal setups share a row."""

    __tablename__ = "fingerprints"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    host: Mapped[Optional[str]] = mapped_column(String(255))
    device: Mapped[Optional[str]] = mapped_column(String(255))
    driver: Mapped[Optional[str]] = mapped_column(String(255))
    engine: Mapped[Optional[str]] = mapped_column(String(255))
    engine_version: Mapped[Optional[str]] = mapped_column(String(255))


class Run(Base):
    """One set of records added together (a night's results); ``content_hash`` makes adding idempotent."""

    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    commit: Mapped[Optional[str]] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    host: Mapped[Optional[str]] = mapped_column(String(255))
    source: Mapped[Optional[str]] = mapped_column(Text)  # the paths it was added from
    n_points: Mapped[int] = mapped_column(Integer)


class Series(Base):
    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("scenario", "point_id", "metric", "fingerprint_id", name="uq_series_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario: Mapped[str] = mapped_column(String(255))
    point_id: Mapped[str] = mapped_column(String(255))
    metric: Mapped[str] = mapped_column(String(255))
    fingerprint_id: Mapped[int] = mapped_column(ForeignKey("fingerprints.id"))


class PointResult(Base):
    """One point's outcome in one run: status, correctness verdict, KL ratio, accuracy, excluded launches."""

    __tablename__ = "point_results"
    __table_args__ = (UniqueConstraint("run_id", "scenario", "point_id", "fingerprint_id", name="uq_point_in_run"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    scenario: Mapped[str] = mapped_column(String(255))
    point_id: Mapped[str] = mapped_column(String(255))
    fingerprint_id: Mapped[int] = mapped_column(ForeignKey("fingerprints.id"))
    status: Mapped[str] = mapped_column(String(32))
    reason: Mapped[Optional[str]] = mapped_column(Text)
    verdict: Mapped[Optional[str]] = mapped_column(String(32))
    kl_ratio: Mapped[Optional[float]] = mapped_column(Float)
    accuracy: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    started_at: Mapped[Optional[datetime]] = mapped_column(DateTime(timezone=True))
    # Launches kept but left out of the regression check as disturbed: [{index, of, reason}] (0002; None before).
    excluded_launches: Mapped[Optional[list[dict[str, Any]]]] = mapped_column(JSON)


class Measurement(Base):
    """One metric of one point in one run, with its spread: per-round values, per-launch values, CI."""

    __tablename__ = "measurements"
    __table_args__ = (
        UniqueConstraint("result_id", "series_id", name="uq_measurement"),
        Index("ix_measurements_series", "series_id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("point_results.id", ondelete="CASCADE"))
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id"))
    value: Mapped[Optional[float]] = mapped_column(Float)
    rounds: Mapped[Optional[list[float]]] = mapped_column(JSON)
    launches: Mapped[Optional[list[float]]] = mapped_column(JSON)
    ci_low: Mapped[Optional[float]] = mapped_column(Float)
    ci_high: Mapped[Optional[float]] = mapped_column(Float)
    # The median over the launches the regression check counts, where it leaves one out (0002): what the
    # history's change points read; None when every launch counted (``value`` is the figure).
    counted_value: Mapped[Optional[float]] = mapped_column(Float)
