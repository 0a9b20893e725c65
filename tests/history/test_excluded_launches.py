"""Acceptance (issue #30): the results history keeps which launches the canary excluded as disturbed and
why — `harness run --history`, `history show` and `history export` say so — and `history check` leaves
them out of its values the way `harness gate` leaves them out of its significance test
(``records.record.launch_values``, one home). An older history database (schema 0001, written by the
harness before) upgrades in place and keeps its runs. On a real tiny engine (transformers, tiny-llama)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness import cli
from harness.records import store
from tests import records as synthetic
from tests.tiny_scenario import tiny

pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")

DATA = Path(__file__).parents[1] / "data"
SCENARIO = tiny(
    name="disturbed",
    measurement={"min_rounds": 2, "threads": 1, "launches": 4, "canary_tolerance": 0},
    sweep={"adapter": ["hf"], "device": ["cpu"]},
)
POINT = "disturbed::hf-cpu-bf16"
START = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """A real run of four launches into a history; ``canary_tolerance: 0`` marks every launch disturbed."""
    root = tmp_path_factory.mktemp("excluded")
    (root / "disturbed.yaml").write_text(SCENARIO.lstrip())
    db = f"sqlite:///{root / 'h.sqlite'}"
    argv = ["run", str(root / "disturbed.yaml"), "--results", str(root / "results"), "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy", "--history", db]) == 0
    (record,) = [r for _, r in store.iter_records([root / "results"])]
    return root, db, record


def test_show_and_export_name_the_excluded_launches_and_why(ran, capsys):
    root, db, _ = ran
    capsys.readouterr()
    assert cli.main(["history", "show", POINT, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "left out as disturbed: launch 1/4: canary " in out and "launch 4/4: canary " in out, out
    assert cli.main(["history", "show", POINT, "--db", db, "--metric", "tpot"]) == 0
    assert "left out as disturbed: launch 1/4: canary " in capsys.readouterr().out
    assert cli.main(["history", "export", "--db", db, "-o", str(root / "h.csv")]) == 0
    row = pd.read_csv(root / "h.csv").query("metric == 'tpot_ms'").iloc[0]
    excluded = json.loads(row.excluded_launches)
    assert [e["index"] for e in excluded] == [0, 1, 2, 3] and all(e["of"] == 4 for e in excluded)
    assert all(e["reason"].startswith("canary ") and "tolerance 0%" in e["reason"] for e in excluded)
    # every launch excluded: the gate then tests them all (disturbed throughout), and so does the history
    assert pd.isna(row.counted_value)


def _night(record, night: int, slow_disturbed: bool, rng):
    """The real record as night ``night``: every launch at its first launch's medians, with a quiet 1 %
    night-to-night noise; on a disturbed night launches 3 and 4 ran 40 % slower and the canary excluded
    them. The record's figures are medians over every ok launch, as ``measure.launches.combine`` makes them."""
    level = 1 + 0.01 * rng.standard_normal()
    first = record.samples.launches[0].medians
    launches = []
    for entry in record.samples.launches:
        disturbed = slow_disturbed and entry.index >= 2
        scale = level * (1.4 if disturbed else 1.0)
        launches.append(
            entry.model_copy(
                update=dict(
                    medians={k: v * scale for k, v in first.items()},
                    excluded="canary 1.40x its calibration after the timed window (tolerance 15%)"
                    if disturbed
                    else None,
                )
            )
        )
    stamp = START + timedelta(days=night)
    edited = synthetic.recombined(
        record.model_copy(update=dict(samples=record.samples.model_copy(update=dict(launches=launches))))
    )
    return edited.model_copy(
        update=dict(
            started_at=stamp.isoformat(),
            environment={**record.environment, "git": {"commit": f"{night:040x}", "dirty": False}},
        )
    )


def test_check_leaves_excluded_launches_out_as_the_gate_does(ran, tmp_path, capsys):
    """Ten quiet nights, then two whose excluded launches ran 40 % slower: every launch's median puts the
    point 20 % slower (a regression held two nights), the counted launches do not move."""
    _, _, record = ran
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    rng = np.random.default_rng(3)
    for night in range(12):
        made = _night(record, night, slow_disturbed=night >= 10, rng=rng)
        store.write(made, tmp_path / f"night{night:02d}")
        assert cli.main(["history", "add", str(tmp_path / f"night{night:02d}"), "--db", db]) == 0
    capsys.readouterr()
    assert cli.main(["history", "check", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out and "SUSPICIOUS" not in out, out
    assert cli.main(["history", "show", POINT, "--db", db, "--metric", "tpot"]) == 0
    shown = capsys.readouterr().out
    assert "left out as disturbed: launch 3/4: canary 1.40x" in shown and "value over every launch" in shown
    assert cli.main(["history", "export", "--db", db, "-o", str(tmp_path / "h.parquet")]) == 0
    tpot = pd.read_parquet(tmp_path / "h.parquet").query("metric == 'tpot_ms'")
    last = tpot.iloc[-1]
    assert last.value == pytest.approx(1.2 * last.counted_value)  # the record's figure keeps them
    assert tpot.counted_value.iloc[:10].isna().all()  # nothing excluded: the value is the figure


def test_an_older_history_database_upgrades_and_keeps_its_runs(tmp_path, capsys):
    """``history_0001.sqlite``: ``harness history add tests/data/records_v1`` by the harness before the
    excluded-launch columns (schema revision 0001). Opening it migrates it; its run reads back, the same
    records are still recognised as stored, and new runs store their excluded launches."""
    from alembic.script import ScriptDirectory
    from sqlalchemy import text

    from harness.history import database as history_store

    shutil.copy(DATA / "history_0001.sqlite", tmp_path / "old.sqlite")
    db = f"sqlite:///{tmp_path / 'old.sqlite'}"
    capsys.readouterr()
    assert cli.main(["history", "list", "--db", db]) == 0
    assert "records_v1" in capsys.readouterr().out
    engine = history_store.open_db(db)
    with engine.connect() as connection:
        (revision,) = connection.execute(text("SELECT version_num FROM alembic_version")).scalars()
        counted = connection.execute(text("SELECT count(counted_value) FROM measurements")).scalar_one()
    engine.dispose()
    assert revision == ScriptDirectory(str(history_store._MIGRATIONS)).get_current_head() and counted == 0
    assert cli.main(["history", "add", str(DATA / "records_v1"), "--db", db]) == 0
    assert "already stored: run #1" in capsys.readouterr().out  # the content hash did not change
    assert cli.main(["history", "show", "demo::openvino-npu-int8_sym", "--db", db, "--metric", "tpot"]) == 0
    assert "demo::openvino-npu-int8_sym tpot_ms" in capsys.readouterr().out
