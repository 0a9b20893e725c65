"""Acceptance (issue 30): `measurement.launches: auto` chooses each point's launches from the variance
components its previous record stored, for `target_change` within `time_budget_s`; with none stored it
falls back to 5 and says so; `harness check` refuses a target no launch count can meet — on a real tiny
engine (transformers, tiny-llama)."""

from __future__ import annotations

import re

import pytest

from harness import cli
from harness.records import store
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


def scenario_text(target: str) -> str:
    return tiny(
        name="auto",
        measurement={"min_rounds": 3, "threads": 1, "launches": "auto", "target_change": target, "time_budget_s": 600},
        sweep={"adapter": ["hf"], "device": ["cpu"]},
    )


def test_check_refuses_a_target_below_the_gates_threshold(tmp_path, capsys):
    path = tmp_path / "auto.yaml"
    path.write_text(scenario_text("3%"))
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "measurement.target_change: 3.0% is not above the regression check's ms/token threshold (5%)" in err


def test_auto_falls_back_then_plans_from_the_stored_components(tmp_path, capsys):
    path = tmp_path / "auto.yaml"
    path.write_text(scenario_text("200%"))
    assert cli.main(["check", str(path)]) == 0
    argv = ["run", str(path), "--results", str(tmp_path / "r"), "--isolation", "none", "--no-progress", "--no-energy"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "auto::hf-cpu-bf16: launches: auto: no stored record of this point, so 5 launches (the default)" in err
    (first,) = [r for _, r in store.iter_records([tmp_path / "r"])]
    assert len(first.samples.launches) == 5 and first.samples.intervals["tpot_ms"].between_cv is not None

    assert cli.main(argv) == 0  # the same point again: planned from the record the first run left
    err = capsys.readouterr().err
    found = re.search(r"auto::hf-cpu-bf16: launches: auto: (\d+) launches detect ([\d.]+)% \(target 200\.0%\)", err)
    assert found, err
    (second,) = [r for _, r in store.iter_records([tmp_path / "r"])]
    assert len(second.samples.launches) == int(found.group(1)) >= 4  # 4 vs 4 is the least that can reach p 0.025
    assert float(found.group(2)) <= 200
