"""Acceptance: what `harness run --launches N --history DB` leaves in the history, read back through
`harness history export` and `harness history show` — on a real tiny engine (transformers, tiny-llama)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness import cli
from tests.tiny_scenario import tiny

pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")


def scenario_text(adapter: str = "hf", device: str = "cpu") -> str:
    # 2 threads: OpenVINO 2026.4.1 dies compiling bf16 at 1 thread on AMX CPUs (compile_probe)
    return tiny(measurement={"min_rounds": 2, "threads": 2}, sweep={"adapter": [adapter], "device": [device]})


@pytest.fixture(scope="module")
def history_of_a_three_launch_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    scenario = root / "scenario.yaml"
    scenario.write_text(scenario_text())
    db = f"sqlite:///{root / 'h.sqlite'}"
    argv = ["run", str(scenario), "--results", str(root / "results"), "--launches", "3", "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy", "--history", db]) == 0
    return root, db


def test_export_keeps_every_launch_and_the_interval(history_of_a_three_launch_run):
    root, db = history_of_a_three_launch_run
    out = root / "export.parquet"
    assert cli.main(["history", "export", "--db", db, "-o", str(out)]) == 0
    table = pd.read_parquet(out)
    tpot = table[table.metric == "tpot_ms"].iloc[0]
    assert len(tpot.launches) == 3  # one median per launch, as the record has them
    assert tpot.ci_low is not None and tpot.ci_high is not None and tpot.ci_low <= tpot.value <= tpot.ci_high


def test_show_spreads_over_launches_not_rounds(history_of_a_three_launch_run, capsys):
    _, db = history_of_a_three_launch_run
    capsys.readouterr()
    assert cli.main(["history", "show", "scenario::hf-cpu-bf16", "--db", db, "--metric", "tpot"]) == 0
    out = capsys.readouterr().out
    assert "(launches)" in out and "(rounds)" not in out, out


def test_the_series_fingerprint_names_the_device_plugin(tmp_path, capsys):
    """A driver (here OpenVINO's CPU plugin build) is part of the fingerprint, so an upgrade starts a new
    series instead of continuing the old one and reading as a regression."""
    pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(scenario_text("openvino", "CPU"))
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    argv = ["run", str(scenario), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-progress"]
    assert cli.main([*argv, "--no-energy", "--history", db]) == 0
    capsys.readouterr()
    from tests.machine import openvino_cpu_precision

    point = f"scenario::openvino-CPU-{openvino_cpu_precision()}"  # the plugin's precision (this CPU's) names it
    assert cli.main(["history", "show", point, "--db", db, "--metric", "tpot"]) == 0
    assert "openvino_intel_cpu_plugin 20" in capsys.readouterr().out
