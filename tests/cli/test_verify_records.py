"""``harness verify --results DIR`` writes one gate-only record per point (issue #28), and every reader takes
it: the report, the export, the history and the regression check; a later ``harness run`` into the same
directory keeps it beside the run's record, whose timing the timing views read. On tiny-llama (transformers)."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from harness.adapters import registry
from harness.adapters.hf import HFAdapter
from harness.cli.app import main
from harness.records import store
from tests.faults import StaleKVCache

pytest.importorskip("torch")

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 8, prompts: 2}
sweep:
  adapter: [hf, hf-checked]
"""
GOOD, CHECKED = "hf-cpu-bf16", "hf-checked-cpu-bf16"


class BrokenChecked(StaleKVCache):
    """Decode steps never write their key/value entries: the gate fails the point."""

    name = "hf-checked"


class HealthyChecked(HFAdapter):
    """The same point, healthy: another night's build that fixed it."""

    name = "hf-checked"


@contextmanager
def checked_as(cls):
    registry.register_adapter(cls)
    try:
        yield
    finally:
        registry.unregister_adapter(cls.name)


@dataclass
class Verified:
    scenario: Path
    results: Path
    references: Path
    code: int
    out: str


def verify(scenario: Path, results: Path, references: Path, cls) -> tuple[int, str]:
    argv = ["verify", str(scenario), "--results", str(results), "--reference-dir", str(references)]
    with checked_as(cls), redirect_stdout(io.StringIO()) as out:
        code = main([*argv, "--isolation", "none"])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def verified(tmp_path_factory, tiny_llama) -> Verified:
    """``harness verify --results`` once, with the checked point broken."""
    root = tmp_path_factory.mktemp("verify-records")
    scenario = root / "scenario.yaml"
    scenario.write_text(SCENARIO.lstrip())
    code, out = verify(scenario, root / "results", root / "references", BrokenChecked)
    return Verified(scenario, root / "results", root / "references", code, out)


def record_files(results: Path) -> list[str]:
    return sorted(path.relative_to(results).as_posix() for path in results.rglob("*.json"))


def test_verify_writes_a_gate_only_record_per_point_and_a_failing_gate_exits_1(verified):
    # Before: nothing was written; the verdicts reached the terminal only.
    assert verified.code == 1
    assert f"FAIL   scenario::{CHECKED}" in verified.out and f"PASS   scenario::{GOOD}" in verified.out
    assert f"gate-only records written under {verified.results}/" in verified.out
    assert record_files(verified.results) == [f"scenario/{CHECKED}.verify.json", f"scenario/{GOOD}.verify.json"]
    records = {record.point_id: record for _, record in store.iter_records(verified.results)}
    good, bad = records[GOOD], records[CHECKED]
    assert good.kind == bad.kind == "verify" and good.status == bad.status == "ok"
    assert good.verdict == "pass" and bad.verdict == "fail"
    for record in (good, bad):  # no timing
        assert record.metrics == {} and record.samples.rounds == [] and record.time_split is None
    gate = bad.correctness
    assert gate.phases.decode.verdict == "fail" and gate.phases.decode.kl_ratio > 5, gate.phases
    assert gate.reasons and gate.path.checks == ["topk-free", "topk-forced", "kl"]
    assert gate.diagnosis is not None  # where the broken point departs from HF
    data = json.loads((verified.results / "scenario" / f"{GOOD}.verify.json").read_text())
    assert data["kind"] == "verify" and data["correctness"]["verdict"] == "pass" and data["metrics"] == {}


def test_the_report_shows_the_verify_verdicts(verified, tmp_path):
    out = tmp_path / "report"
    assert main(["report", str(verified.results), "-o", str(out)]) == 0
    table = pd.read_csv(out / "correctness.csv").set_index("point_id")
    assert table.loc[CHECKED, "gate_verdict"] == "fail" and table.loc[GOOD, "gate_verdict"] == "pass"
    assert set(table["record_kind"]) == {"verify"}
    page = (out / "index.html").read_text()
    section = page[page.index('id="correctness"') :]
    assert CHECKED in section and ">fail<" in section and ">verify<" in section


def test_export_rows_carry_the_verdict_and_the_record_kind(verified, tmp_path):
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(verified.results), "--format", "jsonl", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # no timed rounds, so no token rows: the gate's row per point and its token classes and flips
    assert {row["kind"] for row in rows} == {"gate", "class", "flips"}
    assert {row["record_kind"] for row in rows} == {"verify"}
    rows = [row for row in rows if row["kind"] == "gate"]
    assert {(row["point"], row["verdict"], row["record_kind"]) for row in rows} == {
        (GOOD, "pass", "verify"),
        (CHECKED, "fail", "verify"),
    }
    assert all(row["kl"] is not None and row["offset_ms"] is None and row["gap_ms"] is None for row in rows)


def test_history_add_stores_the_verdicts_without_a_timing_series(verified, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    assert main(["history", "add", str(verified.results), "--db", db]) == 0
    assert "2 points, 0 values" in capsys.readouterr().out
    assert main(["history", "show", f"scenario::{CHECKED}", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "no timing series" in out and "status ok, correctness fail" in out, out


def test_gate_reports_a_verdict_change_between_two_verify_directories(verified, tmp_path, capsys):
    fixed = tmp_path / "fixed"
    code, _ = verify(verified.scenario, fixed, verified.references, HealthyChecked)
    assert code == 0
    assert main(["gate", str(fixed), "--baseline", str(verified.results)]) == 0
    out = capsys.readouterr().out
    assert f"CORRECTNESS scenario::{CHECKED}: fail -> pass (baseline -> new)" in out, out
    assert "2 point(s) compared on correctness only" in out and "PASS; 2 point(s) compared" in out, out
    assert main(["gate", str(verified.results), "--baseline", str(fixed)]) == 1
    out = capsys.readouterr().out
    assert f"CORRECTNESS scenario::{CHECKED}: pass -> fail (baseline -> new)" in out, out
    assert f"FAIL scenario::{CHECKED}: correctness: top-5 agreement and KL tier fails" in out, out


def test_a_later_run_keeps_both_records_and_the_timing_views_read_the_run(verified, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(verified.results, results)
    correctness_only = (results / "scenario" / f"{GOOD}.verify.json").read_bytes()
    argv = ["run", str(verified.scenario), "--results", str(results), "-k", "hf-cpu"]
    argv += ["--reference-dir", str(verified.references), "--isolation", "none", "--no-progress", "--no-energy"]
    with checked_as(BrokenChecked):  # a point of the scenario, not run here (-k)
        assert main(argv) == 0
    assert record_files(results) == [
        f"scenario/{CHECKED}.verify.json",
        f"scenario/{GOOD}.json",
        f"scenario/{GOOD}.verify.json",
    ]
    assert (results / "scenario" / f"{GOOD}.verify.json").read_bytes() == correctness_only  # not overwritten
    df = store.load(results).set_index("point_id")  # one row per point
    assert df.loc[GOOD, "record_kind"] == "run" and df.loc[GOOD, "tpot_ms"] > 0
    assert df.loc[CHECKED, "record_kind"] == "verify"
    capsys.readouterr()
    # Before: "point scenario::hf-cpu-bf16 appears twice" (exit 2) from the regression check.
    assert main(["gate", str(results), "--baseline", str(results)]) == 1  # the checked point's gate still fails
    out = capsys.readouterr().out
    assert "appears twice" not in out and "1 point(s) compared on correctness only" in out, out
    report = tmp_path / "report"
    assert main(["report", str(results), "-o", str(report)]) == 0
    points = pd.read_csv(report / "points.csv").set_index("point_id")
    assert len(points) == 2 and points.loc[GOOD, "record_kind"] == "run" and points.loc[GOOD, "tpot_ms"] > 0
    verdicts = pd.read_csv(report / "correctness.csv")
    assert sorted(zip(verdicts.point_id, verdicts.record_kind)) == [
        (CHECKED, "verify"),
        (GOOD, "run"),
        (GOOD, "verify"),
    ]
    capsys.readouterr()
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    assert main(["history", "add", str(results), "--db", db]) == 0
    assert "2 points, 0 values" not in capsys.readouterr().out  # the run's timing series are stored
    assert main(["history", "show", f"scenario::{GOOD}", "--db", db, "--metric", "tpot"]) == 0


def test_verify_help_says_what_is_written(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "DIR/<scenario>/<point id>.verify.json" in text and "no timing" in text
    assert "Without --results no record is written" in text
