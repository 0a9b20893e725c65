"""Acceptance: what `harness run` writes for a launch, read from the record on disk — on a real tiny engine
(transformers, tiny-llama)."""

from __future__ import annotations

import pytest

from harness import cli
from harness.records import store
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


def scenario_text(rounds: int) -> str:
    return tiny(measurement={"min_rounds": rounds, "threads": 1}, sweep={"adapter": ["hf"], "device": ["cpu"]})


def run_once(root, rounds: int):
    scenario = root / f"rounds{rounds}.yaml"
    scenario.write_text(scenario_text(rounds))
    out = root / f"results{rounds}"
    argv = ["run", str(scenario), "--results", str(out), "--isolation", "none", "--no-progress", "--no-energy"]
    assert cli.main(argv) == 0
    (record,) = [r for _, r in store.iter_records([out])]
    return record


@pytest.mark.parametrize("rounds, checked", [(3, False), (5, True)])
def test_the_drift_check_says_whether_it_could_run(tmp_path, rounds, checked):
    (drift,) = run_once(tmp_path, rounds).samples.launches[0].drift
    assert drift.checked is checked
    if checked:
        assert drift.p_value is not None and drift.slope_per_round is not None
    else:  # three rounds: Kendall's test can never reach p < 0.05, and the record says so instead of "[]"
        assert not drift.flagged and "needs 5" in drift.why


def test_no_energy_says_what_it_left_out_and_launches_keep_their_wall_time(tmp_path):
    record = run_once(tmp_path, 2)  # run with --no-energy
    for metric in ("energy_per_token_mj", "cpu_cycles", "roofline_fraction"):
        assert "--no-energy" in record.unavailable[metric], record.unavailable
    # device memory does not depend on the energy probes: on the CPU its own reason says where to look
    assert record.unavailable["device_memory_peak_mb"] == "cpu: host memory is peak_rss_mb"
    assert record.samples.launches[0].wall_s > 0  # was always null
