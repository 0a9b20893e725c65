"""Open a history database (migrating it to the current schema) and add runs to it.

Adding is idempotent and safe under concurrent writers: a run is identified by the content hash of its
records (a unique column), and fingerprints and series are created with INSERT ... ON CONFLICT DO
NOTHING, so two processes adding at once never lose or duplicate a row. Rows are inserted in a sorted
order (no lock cycles between writers), and a transaction PostgreSQL aborts as a deadlock or
serialization failure is retried.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from harness.errors import UsageError, WriteFailed
from harness.history.ingest import FingerprintKey, RunRows

_MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_UPGRADE_LOCK = 0x6869_7374  # PostgreSQL advisory lock key ("hist"): one migrator at a time
_RETRIES = 5


@dataclass(frozen=True)
class Added:
    run_id: int
    new: bool  # False: the same records were already stored
    points: int
    values: int


def _sqlite_events(engine) -> None:
    """pysqlite's own transaction handling skips BEGIN before DDL; take over and BEGIN IMMEDIATE so
    concurrent writers wait on the file lock (busy timeout) instead of failing on a lock upgrade."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    @event.listens_for(engine, "begin")
    def _begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def engine_for(url: str):
    """A SQLAlchemy engine for ``url`` (the parent directory of a SQLite file is created)."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(
            f"--db: {url!r}: not a database URL (e.g. sqlite:///results/history.sqlite or "
            "postgresql+psycopg://user@host/db)"
        ) from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        from harness.io import check_writable_file  # issue 17: a one-line error, not a traceback

        check_writable_file(parsed.database, "--db")
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(parsed, connect_args={"timeout": 60})
            _sqlite_events(engine)
        else:
            engine = create_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise UsageError(
            f"--db: {parsed.render_as_string(hide_password=True)}: no driver ({exc}); for "
            "PostgreSQL use postgresql+psycopg://... with `pip install psycopg[binary]`"
        ) from None
    return engine


def upgrade(engine) -> None:
    """Bring the schema to the newest Alembic revision shipped in ``migrations/`` (no-op when current)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":  # DDL is transactional there: the second migrator waits
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_UPGRADE_LOCK})")
        _refuse_unknown_revision(config, connection, engine.url.render_as_string(hide_password=True))
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _refuse_unknown_revision(config, connection, url: str) -> None:
    """A database at a revision this harness does not ship was written by a newer one: say so in one
    line (Alembic's own error is a traceback that ends in "Can't locate revision")."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from harness import __version__

    script = ScriptDirectory.from_config(config)
    known = {revision.revision for revision in script.walk_revisions()}
    unknown = sorted(set(MigrationContext.configure(connection).get_current_heads()) - known)
    if unknown:
        raise UsageError(
            f"--db: {url}: written by a newer harness (revision {', '.join(unknown)}; harness {__version__} "
            f"knows up to {', '.join(script.get_heads())}); upgrade harness to read or add to it"
        )


def open_db(url: str):
    """An engine on ``url`` with the schema migrated to the current revision."""
    from sqlalchemy.exc import DatabaseError

    engine = engine_for(url)
    try:
        upgrade(engine)
    except DatabaseError as exc:  # unreachable, locked, or a file that is not a database at all
        raise UsageError(
            f"--db: {engine.url.render_as_string(hide_password=True)}: cannot open "
            f"({str(exc.orig).strip().splitlines()[0]})"
        ) from None
    return engine


def _insert_ignore(session, table, rows: list[dict], keys: list[str]) -> None:
    """INSERT the rows, skipping those whose ``keys`` already exist (another writer may be adding them)."""
    if not rows:
        return
    dialect = session.bind.dialect.name
    if dialect in ("postgresql", "sqlite"):
        module = __import__(f"sqlalchemy.dialects.{dialect}", fromlist=["insert"])
        session.execute(module.insert(table).on_conflict_do_nothing(index_elements=keys), rows)
        return
    from sqlalchemy import insert
    from sqlalchemy.exc import IntegrityError

    for row in rows:  # other databases: one savepoint per row
        try:
            with session.begin_nested():
                session.execute(insert(table), [row])
        except IntegrityError:
            pass


def _fingerprint_ids(session, keys: Iterable[FingerprintKey]) -> dict[FingerprintKey, int]:
    from sqlalchemy import select

    from harness.history.orm import Fingerprint

    by_hash = {key.hash: key for key in keys}
    _insert_ignore(
        session, Fingerprint.__table__, [{"hash": h, **k.__dict__} for h, k in sorted(by_hash.items())], ["hash"]
    )
    rows = session.execute(select(Fingerprint.hash, Fingerprint.id).where(Fingerprint.hash.in_(list(by_hash))))
    return {by_hash[h]: i for h, i in rows}


def _add_once(engine, run: RunRows) -> Added:
    from sqlalchemy import insert, select
    from sqlalchemy.orm import Session

    from harness.history.orm import Measurement, PointResult, Run, Series

    with Session(engine) as session, session.begin():
        _insert_ignore(
            session,
            Run.__table__,
            [
                {
                    "content_hash": run.content_hash,
                    "commit": run.commit,
                    "started_at": run.started_at,
                    "added_at": datetime.now(timezone.utc),
                    "host": run.host,
                    "source": run.source,
                    "n_points": len(run.points),
                }
            ],
            ["content_hash"],
        )
        # A run another writer committed first is found here too (read committed sees it after the wait).
        run_id = session.scalar(select(Run.id).where(Run.content_hash == run.content_hash))
        if session.scalar(select(PointResult.id).where(PointResult.run_id == run_id).limit(1)) is not None:
            return Added(run_id, False, len(run.points), 0)
        fingerprints = _fingerprint_ids(session, {p.fingerprint for p in run.points})
        keys = sorted(
            {(p.scenario, p.point_id, v.metric, fingerprints[p.fingerprint]) for p in run.points for v in p.values}
        )
        _insert_ignore(
            session,
            Series.__table__,
            [dict(zip(("scenario", "point_id", "metric", "fingerprint_id"), k)) for k in keys],
            ["scenario", "point_id", "metric", "fingerprint_id"],
        )
        wanted = sorted(set(fingerprints.values()))
        series = {
            (s, p, m, f): i
            for i, s, p, m, f in session.execute(
                select(Series.id, Series.scenario, Series.point_id, Series.metric, Series.fingerprint_id).where(
                    Series.fingerprint_id.in_(wanted)
                )
            )
        }
        session.execute(
            insert(PointResult.__table__),
            [
                {
                    "run_id": run_id,
                    "scenario": p.scenario,
                    "point_id": p.point_id,
                    "fingerprint_id": fingerprints[p.fingerprint],
                    "status": p.status,
                    "reason": p.reason,
                    "verdict": p.verdict,
                    "kl_ratio": p.kl_ratio,
                    "accuracy": p.accuracy,
                    "started_at": p.started_at,
                    "excluded_launches": [asdict(e) for e in p.excluded] or None,
                }
                for p in run.points
            ],
        )
        results = {
            (s, p, f): i
            for i, s, p, f in session.execute(
                select(PointResult.id, PointResult.scenario, PointResult.point_id, PointResult.fingerprint_id).where(
                    PointResult.run_id == run_id
                )
            )
        }
        values = [
            {
                "result_id": results[(p.scenario, p.point_id, fingerprints[p.fingerprint])],
                "series_id": series[(p.scenario, p.point_id, v.metric, fingerprints[p.fingerprint])],
                "value": v.value,
                "rounds": v.rounds,
                "launches": v.launches,
                "ci_low": v.ci_low,
                "ci_high": v.ci_high,
                "counted_value": v.counted_value,
            }
            for p in run.points
            for v in p.values
        ]
        if values:
            session.execute(insert(Measurement.__table__), values)
        return Added(run_id, True, len(run.points), len(values))


def add(engine, run: RunRows) -> Added:
    """Store ``run`` unless the same records are stored already."""
    from sqlalchemy.exc import OperationalError

    attempt = 0
    while True:
        try:
            return _add_once(engine, run)
        except OperationalError as exc:  # deadlock / serialization failure / SQLite busy: try again
            attempt += 1
            if attempt == _RETRIES or getattr(exc.orig, "sqlstate", None) not in ("40P01", "40001", None):
                raise WriteFailed(  # a full disk, a read-only file, a lost server: one line, the database's words
                    engine.url.render_as_string(hide_password=True),
                    str(exc.orig).strip().splitlines()[0],
                    f"run from {run.source} not added (one transaction: nothing of it is stored)",
                ) from None
            time.sleep(0.05 * attempt)
