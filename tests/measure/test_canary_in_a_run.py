"""Acceptance: the machine-speed canary (issue #30). A real `harness run` on a tiny engine (transformers,
tiny-llama) in isolated workers, with ``canary_tolerance: 0`` so every launch counts as disturbed: each
launch carries its canary reading, the run's calibration is in the record's environment, disturbed launches
are re-run a bounded number of times and kept but marked — in the record, the run table, summary.md, the
HTML report and the pytest-benchmark JSON — and `harness gate` leaves them out of its significance test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import cli
from harness.records import benchmark_json, store
from tests.records import recombined
from tests.tiny_scenario import tiny

pytest.importorskip("torch")

SCENARIO = tiny(
    name="canary",
    measurement={"min_rounds": 2, "threads": 1, "launches": 2, "canary_tolerance": 0, "disturbed_reruns": 1},
    sweep={"adapter": ["hf"], "device": ["cpu"]},
)
EXCLUDED = "excluded from the significance test as disturbed (launch"


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    root = tmp_path_factory.mktemp("canary")
    (root / "canary.yaml").write_text(SCENARIO.lstrip())
    argv = [sys.executable, "-m", "harness.cli", "run", "canary.yaml", "--results", "results", "--no-progress"]
    done = subprocess.run([*argv, "--no-energy"], cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root, done.stdout


def test_every_disturbed_launch_is_rerun_once_and_kept_with_its_reason(ran):
    root, out = ran
    (record,) = [r for _, r in store.iter_records([root / "results"])]
    launches = record.samples.launches
    assert len(launches) == 3, [e.index for e in launches]  # 2 launches + 1 re-run (disturbed_reruns: 1)
    for entry in launches:
        assert entry.canary is not None and entry.canary.before_s > 0 and entry.canary.after_s > 0
        assert entry.excluded and entry.excluded.startswith("canary") and "tolerance 0%" in entry.excluded
        assert entry.medians.get("tpot_ms")  # nothing measured is lost
    calibration = record.environment["canary"]
    assert calibration["seconds"] > 0 and len(calibration["readings_s"]) == 5
    assert f"3 of 3 launches {EXCLUDED}" in out  # the run table's warning line
    assert out.count("launches excluded from the significance test") == 1, out  # one line for the point


def test_summary_html_and_benchmark_json_mark_the_excluded_launches(ran, tmp_path):
    root, _ = ran
    assert cli.main(["report", str(root / "results"), "-o", str(tmp_path / "report")]) == 0
    assert EXCLUDED in (tmp_path / "report" / "summary.md").read_text()
    html = (tmp_path / "report" / "index.html").read_text()
    assert EXCLUDED in html and "canary_ratio" in html
    (row,) = store.load(root / "results").to_dict("records")  # the pandas frame
    assert row["tpot_ms"] > 0 and row["canary_ratio"] > 0 and row["excluded_launches"]
    out = tmp_path / "rows.jsonl"
    assert cli.main(["export", str(root / "results"), "-o", str(out), "--format", "jsonl"]) == 0
    (record,) = [r for _, r in store.iter_records([root / "results"])]
    carried = benchmark_json.compact(record)  # what the pytest plugin writes into --benchmark-json
    assert all(entry["excluded"] for entry in carried["samples"]["launches"])
    assert json.loads(json.dumps(carried))["environment"]["canary"]["seconds"] > 0


def test_gate_leaves_excluded_launches_out_of_the_significance_test(ran, capsys):
    root, _ = ran
    baselines = root / "baselines"
    assert cli.main(["baseline", "save", str(root / "results"), "--name", "b", "--baselines-dir", str(baselines)]) == 0
    capsys.readouterr()
    gate = ["gate", str(root / "results"), "--baseline", "b", "--baselines-dir", str(baselines)]
    assert cli.main([*gate, "--max-regression", "tpot=5%"]) == 0
    out = capsys.readouterr().out
    assert (
        "launches excluded from the significance test as disturbed" in out
        and "canary::hf-cpu-bf16 (baseline 3 of 3, new 3 of 3)" in out
    ), out
    # every launch was excluded: the significance test counts them all rather than none, and says so
    assert (
        "under two undisturbed launches in 1 point(s), so the significance test counts the disturbed ones too" in out
    ), out
    assert "judged without launch statistics" not in out, out


def test_a_machine_disturbed_throughout_still_fails_a_real_regression(ran, capsys):
    """Every launch excluded must not mean no launch-level test: a baseline 4x as fast, with its launches'
    medians scaled but its rounds unchanged, once passed through the one-launch rule (the rounds agree)."""
    root, _ = ran
    baselines = root / "baselines"
    assert (
        cli.main(["baseline", "save", str(root / "results"), "--name", "fast", "--baselines-dir", str(baselines)]) == 0
    )
    for path, saved in store.iter_records([baselines / "fast"]):
        for launch in saved.samples.launches:
            launch.medians = {k: v * 0.25 for k, v in launch.medians.items()}
        path.write_text(json.dumps(recombined(saved).to_dict()))  # its figures follow its launches
    capsys.readouterr()
    gate = ["gate", str(root / "results"), "--baseline", "fast", "--baselines-dir", str(baselines)]
    assert cli.main([*gate, "--max-regression", "tpot=5%"]) == 1, capsys.readouterr().out
