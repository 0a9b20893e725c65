"""The results history against real databases: SQLite and a PostgreSQL server started for the tests."""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from harness.cli import history as cli
from harness.cli.history_options import add_parser
from harness.history import database, queries
from harness.history.ingest import read_run
from harness.records import store as record_store
from harness.records.engine import EngineInfo
from tests.history_pg import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.records import record
from tests.tiny_scenario import tiny

START = datetime(2025, 1, 1, 2, 0, tzinfo=timezone.utc)


def commit(night: int) -> str:
    return hashlib.sha1(f"night {night}".encode()).hexdigest()


def write_night(
    root: Path,
    night: int,
    tpot: dict[str, float],
    engine_version: str = "5",
    verdict: str = "pass",
    host: str = "ci-host",
) -> Path:
    """One night's results directory: a record per point with ``tpot`` ms/token."""
    out = root / f"night{night:03d}"
    for point, value in tpot.items():
        r = record(point_id=point, tpot_ms=value, seed=night, jitter=0.002, verdict=verdict)
        r.started_at = (START + timedelta(days=night)).isoformat()
        r.environment = {"hostname": host, "git": {"commit": commit(night), "dirty": False}}
        r.engine = EngineInfo(name="transformers", version=engine_version, device="cpu")
        record_store.write(r, out)
    return out


def history(root: Path, nights: int, seed: int, step_at: int | None = None, step: float = 0.03) -> list[Path]:
    """Nights at 2 % CV around 50 ms/token for two points; point ``p`` steps up by ``step`` at ``step_at``."""
    rng = np.random.default_rng(seed)
    paths = []
    for night in range(nights):
        values = 50 * (1 + 0.02 * rng.standard_normal(2))
        if step_at is not None and night >= step_at:
            values[0] *= 1 + step
        paths.append(write_night(root, night, {"p": float(values[0]), "q": float(values[1])}))
    return paths


def harness_history(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return cli.run(parser.parse_args(["history", *map(str, argv)]))


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    return request.getfixturevalue("pg_url")


def count(url: str, table: str) -> int:
    from sqlalchemy import text

    engine = database.engine_for(url)
    try:
        with engine.connect() as connection:
            return connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
    finally:
        engine.dispose()


def test_open_migrates_to_the_shipped_head_and_the_models_match_it(db):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from harness.history.orm import Base

    engine = database.open_db(db)
    database.open_db(db)  # a second open is a no-op
    heads = ScriptDirectory(str(database._MIGRATIONS)).get_heads()
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert set(context.get_current_heads()) == set(heads)
        assert compare_metadata(context, Base.metadata) == []  # schema.py and the migrations agree
    engine.dispose()


def test_commit_on_the_command_line_overrides_the_records_own(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    given = "0123456789abcdef0123456789abcdef01234567"
    assert harness_history("add", write_night(tmp_path, 0, {"p": 50.0}), "--db", db, "--commit", given) == 0
    assert harness_history("add", write_night(tmp_path, 1, {"p": 50.0}), "--db", db) == 0
    engine = database.open_db(db)
    assert [run.commit for run in queries.runs(engine)] == [given, commit(1)]
    engine.dispose()
    capsys.readouterr()
    assert harness_history("list", "--db", db) == 0
    listed = capsys.readouterr().out
    assert given[:12] in listed and commit(1)[:12] in listed and commit(0)[:12] not in listed


def test_adding_the_same_run_twice_stores_it_once(db, tmp_path, capsys):
    night = write_night(tmp_path, 0, {"p": 50.0, "q": 60.0})
    assert harness_history("add", night, "--db", db) == 0
    assert harness_history("add", night, "--db", db) == 0
    assert "already stored: run #1" in capsys.readouterr().out
    assert count(db, "runs") == 1 and count(db, "point_results") == 2
    values = count(db, "measurements")
    assert values == count(db, "series") and values > 2 * 10  # every numeric metric of both points


def test_a_run_keeps_values_spread_verdict_commit_and_fingerprint(db, tmp_path):
    write_night(tmp_path, 0, {"p": 50.0}, verdict="fail")
    engine = database.open_db(db)
    run = read_run(tmp_path / "night000")
    assert database.add(engine, run).new
    (tpot,) = queries.series(engine, "demo", "p", "tpot_ms", spread=True)
    assert tpot.values == [pytest.approx(50.0, rel=0.01)]
    low, high = tpot.spread[0]
    assert low < tpot.values[0] < high  # per-round values kept
    assert tpot.verdicts == ["fail"]
    assert tpot.fingerprint.host == "ci-host" and tpot.fingerprint.engine_version == "5"
    (only,) = queries.runs(engine)
    assert only.commit == commit(0) and only.started_at.replace(tzinfo=timezone.utc) == START
    outcome = queries.point_outcomes(engine, "demo", "p")
    assert [(o[1], o[2], o[3]) for o in outcome] == [("ok", "fail", 300.0)]
    engine.dispose()


def test_a_new_engine_version_starts_a_new_series(db, tmp_path):
    engine = database.open_db(db)
    database.add(engine, read_run(write_night(tmp_path, 0, {"p": 50.0})))
    database.add(engine, read_run(write_night(tmp_path, 1, {"p": 40.0}, engine_version="6")))
    found = queries.series(engine, "demo", "p", "tpot_ms")
    assert sorted(s.fingerprint.engine_version for s in found) == ["5", "6"]
    assert all(len(s.values) == 1 for s in found)
    engine.dispose()


def test_check_finds_a_3_percent_step_at_the_right_night_with_its_commit_range(db, tmp_path, capsys):
    for path in history(tmp_path, 60, seed=8, step_at=20):
        assert harness_history("add", path, "--db", db) == 0
    capsys.readouterr()
    assert harness_history("check", "--since", 45, "--db", db) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REGRESSION demo::p tpot_ms")]
    assert len(lines) == 1, lines
    assert "from run #21 (2025-01-21" in lines[0] and "last run before: run #20 (2025-01-20" in lines[0]
    assert f"bisect {commit(19)}..{commit(20)}" in lines[0]
    # Forty nights later the step is no longer new: the nightly check passes, the report still lists it.
    assert harness_history("check", "--db", db) == 0
    assert "older open one(s)" in capsys.readouterr().out


def test_check_stays_quiet_on_a_noise_only_history(db, tmp_path, capsys):
    assert harness_history("add", *history(tmp_path, 60, seed=8), "--db", db) == 0
    assert harness_history("check", "--since", 60, "--db", db) == 0
    assert "0 new change point(s)" in capsys.readouterr().out


def test_list_show_and_export(db, tmp_path, capsys):
    import pandas as pd

    harness_history("add", *history(tmp_path, 3, seed=1), "--db", db)
    assert harness_history("list", "--db", db) == 0
    out = capsys.readouterr().out
    assert out.count("ci-host") == 3 and commit(2)[:12] in out
    assert harness_history("show", "demo::p", "--metric", "tpot", "--db", db) == 0
    out = capsys.readouterr().out
    assert "demo::p tpot_ms" in out and len([line for line in out.splitlines() if "pass" in line]) == 3
    assert harness_history("show", "demo::nope", "--db", db) == 2
    assert "did you mean demo::p" in capsys.readouterr().err
    for name in ("all.parquet", "all.csv"):
        assert harness_history("export", "-o", tmp_path / name, "--db", db) == 0
    parquet, csv = pd.read_parquet(tmp_path / "all.parquet"), pd.read_csv(tmp_path / "all.csv")
    assert len(parquet) == len(csv) == count(db, "measurements")
    tpot = parquet[(parquet.metric == "tpot_ms") & (parquet.point_id == "p")]
    assert len(tpot) == 3 and len(tpot.iloc[0]["rounds"]) == 5
    assert json.loads(csv[csv.metric == "tpot_ms"].iloc[0]["rounds"])


def test_usage_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert harness_history("list", "--db", "nonsense") == 2
    assert capsys.readouterr().err.startswith("ERROR --db: 'nonsense': not a database URL")
    assert harness_history("show", "no-separator", "--db", f"sqlite:///{tmp_path / 'h.sqlite'}") == 2
    assert "expected SCENARIO::POINT" in capsys.readouterr().err
    assert harness_history("add", tmp_path / "missing", "--db", f"sqlite:///{tmp_path / 'h.sqlite'}") == 2
    assert "no such results file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        harness_history("check", "--threshold", "lots")


@pytest.mark.parametrize("command", ["show", "check", "add", "export", "list"])
def test_a_database_from_a_newer_harness_is_one_line_naming_it(command, tmp_path, capsys):
    from harness import cli as harness_cli

    # Before: a 77-line Alembic traceback ending in "Can't locate revision identified by '0099_future'".
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    engine = database.open_db(db)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0099_future'")
    engine.dispose()
    argv = {
        "show": ["show", "demo::p"],
        "check": ["check"],
        "add": ["add", str(write_night(tmp_path, 0, {"p": 50.0}))],
        "export": ["export", "-o", str(tmp_path / "rows.csv")],
        "list": ["list"],
    }[command]
    capsys.readouterr()
    assert harness_cli.main(["history", *argv, "--db", db]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"ERROR --db: {db}: written by a newer harness (revision 0099_future;"), err
    assert "upgrade harness" in err


def test_trend_figures_and_the_open_change_points(tmp_path):
    from harness.report.trends import trend_figures

    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    engine = database.open_db(db)
    for path in history(tmp_path, 40, seed=8, step_at=25, step=0.06):
        database.add(engine, read_run(path))
    engine.dispose()
    report = trend_figures(db, tmp_path / "trends")
    assert [p.name for p in report.figures] == ["p.png"]  # only the point that moved
    assert report.figures[0].stat().st_size > 1000
    table = report.open_changes
    tpot = table[(table.point == "demo::p") & (table.metric == "tpot_ms")]
    assert len(tpot) == 1 and tpot.iloc[0].first_run_after == 26 and tpot.iloc[0].commit_after == commit(25)
    assert not (table.point == "demo::q").any()
    everything = trend_figures(db, tmp_path / "all", all_points=True, workers=1)
    assert sorted(p.name for p in everything.figures) == ["p.png", "q.png"]


def test_a_verdict_change_gets_a_trend_figure(tmp_path):
    from harness.report.trends import trend_figures

    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    engine = database.open_db(db)
    for night in range(6):
        database.add(
            engine,
            read_run(write_night(tmp_path, night, {"p": 50.0, "q": 50.0}, verdict="fail" if night >= 4 else "pass")),
        )
    engine.dispose()
    assert queries.verdict_changes(database.open_db(db)) == {("demo", "p"), ("demo", "q")}
    report = trend_figures(db, tmp_path / "trends", workers=1)
    assert sorted(p.name for p in report.figures) == ["p.png", "q.png"] and report.open_changes.empty


def _add_runs(url: str, paths: list[str]) -> int:
    engine = database.open_db(url)
    added = sum(database.add(engine, read_run(path)).new for path in paths)
    engine.dispose()
    return added


def test_two_processes_adding_at_once_lose_nothing(db, tmp_path):
    """Both start on an empty database (both migrate), race on the same ten nights, then add their own:
    PostgreSQL (the team set-up) and SQLite (one file, writers wait on its lock)."""
    paths = [str(p) for p in history(tmp_path, 30, seed=2)]
    shared, mine, theirs = paths[:10], paths[10:20], paths[20:]
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        added = pool.starmap(_add_runs, [(db, shared + mine), (db, shared + theirs)])
    assert sum(added) == 30  # each shared night stored by exactly one of them
    assert count(db, "runs") == 30 and count(db, "point_results") == 60
    per_run = count(db, "measurements") // 30
    assert count(db, "measurements") == 30 * per_run and count(db, "series") == per_run


def test_add_records_stores_a_run_from_records_in_memory(db):
    """What `harness run --history URL` calls with the records it just measured."""
    from harness.history import add_records

    records = [record(point_id=p, tpot_ms=50.0) for p in ("p", "q")]
    first = add_records(records, db, source="harness run", commit="abc123")
    assert first.new and first.points == 2 and first.values > 0
    assert not add_records(records[::-1], db).new  # same records in another order: the same run
    engine = database.open_db(db)
    assert [(r.commit, r.source) for r in queries.runs(engine)] == [("abc123", "harness run")]
    engine.dispose()


def test_the_history_command_imports_no_database_library(pytester):
    code = (
        "import sys, harness.cli.history; heavy = {'sqlalchemy', 'alembic', 'ruptures', 'pandas', 'matplotlib'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = pytester.run(sys.executable, "-c", code)
    assert result.stdout.lines[-1] == "[]"


def test_the_report_shows_trends_and_open_change_points_from_a_history(tmp_path):
    from harness.report.build import build

    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    nights = history(tmp_path, 40, seed=8, step_at=25, step=0.06)
    for path in nights:
        assert harness_history("add", path, "--db", db) == 0
    written = build([nights[-1]], tmp_path / "report", history=db)
    page = written.html.read_text()
    assert "Open change points" in page and "trend: demo::p" in page and "trend: demo::q" not in page
    assert any(p.name == "p.png" and p.exists() for p in written.plots)
    assert "](plots/trends/demo/p.png)" in written.markdown.read_text()


def test_harness_run_adds_its_records_to_a_history(tmp_path, write_scenario, fake_adapters, capsys):
    from harness import cli as harness_cli

    scenario = write_scenario(tiny(measurement={"min_rounds": 2}))
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    argv = [
        "run",
        str(scenario),
        "--results",
        str(tmp_path / "results"),
        "--isolation",
        "none",
        "--no-progress",
        "--no-energy",
        "--history",
        db,
    ]
    assert harness_cli.main(argv) == 0
    assert "history: run #1 in" in capsys.readouterr().out
    assert harness_history("list", "--db", db) == 0
    assert "fake-cpu" in capsys.readouterr().out or count(db, "runs") == 1
