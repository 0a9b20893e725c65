"""Results history: every run kept in a database (SQLite by default, any SQLAlchemy URL), with
change-point detection over each series and trend figures.

A *series* is one metric of one point (scenario::point_id) on one hardware/software *fingerprint*
(host, device, driver, engine, engine version), so a new driver or engine starts a new series instead
of looking like a regression. Nothing here is imported by ``import harness``; SQLAlchemy, Alembic,
ruptures and matplotlib load only when a history command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:
    from harness.history.database import Added
    from harness.records.record import Record

DEFAULT_URL = "sqlite:///results/history.sqlite"
# What the history needs beyond the core (`pip install harness[history]`); named in the error when missing.
REQUIRES = ("sqlalchemy", "alembic", "ruptures")


def add_records(
    records: Iterable[Record], url: str = DEFAULT_URL, source: str = "harness run", commit: Optional[str] = None
) -> Added:
    """Add the records of one run (e.g. the points ``harness run --history URL`` just measured) as one
    run; adding the same records again stores nothing."""
    from harness.history import database, ingest

    engine = database.open_db(url)
    try:
        return database.add(engine, ingest.run_rows([ingest._rows(r) for r in records], source, commit))
    finally:
        engine.dispose()
