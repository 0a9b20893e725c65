"""Acceptance: `harness gate --confirm` reruns the flagged points from whatever directory the nightly runs
it in — the record keeps the scenario file's absolute path — on a real tiny engine (transformers)."""

from __future__ import annotations

import json

import pytest

from harness import cli
from harness.records import store
from tests import records as synthetic
from tests.tiny_scenario import tiny

pytest.importorskip("torch")

SCENARIO = tiny(
    name="confirm",
    measurement={"min_rounds": 2, "threads": 1, "launches": 2},
    sweep={"adapter": ["hf"], "device": ["cpu"]},
)


def test_confirm_reruns_from_another_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "confirm.yaml").write_text(SCENARIO.lstrip())
    monkeypatch.chdir(tmp_path)  # the run names its scenario relatively, as a CI job does
    argv = ["run", "scenarios/confirm.yaml", "--results", "night", "--isolation", "none", "--no-progress"]
    assert cli.main([*argv, "--no-energy"]) == 0
    (record,) = [r for _, r in store.iter_records([tmp_path / "night"])]
    assert record.scenario_path == str(tmp_path / "scenarios" / "confirm.yaml")
    assert cli.main(["baseline", "save", "night", "--name", "b", "--baselines-dir", "baselines"]) == 0
    for path, saved in store.iter_records([tmp_path / "baselines" / "b"]):  # a baseline twice as fast: flagged
        for launch in saved.samples.launches:
            launch.medians = {k: v / 2 for k, v in launch.medians.items()}
        path.write_text(json.dumps(synthetic.recombined(saved).to_dict()))  # its figures halved with them
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    gate = ["gate", str(tmp_path / "night"), "--baseline", "b", "--baselines-dir", str(tmp_path / "baselines")]
    code = cli.main([*gate, "--max-regression", "tpot=5%,ttft=5%", "--confirm", "1"])
    out = capsys.readouterr()
    assert code in (0, 1) and "--confirm 1: reran confirm::hf-cpu-bf16" in out.out, out.out + out.err
