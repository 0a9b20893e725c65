"""``harness baseline save``, ``harness compare`` and ``harness gate`` as a nightly job uses them."""

from __future__ import annotations

import pytest

from harness.cli.app import main
from harness.records import store
from tests.records import record

POINTS = ["hf-cpu-bf16-prompt32", "hf-cpu-bf16-prompt1024"]


def write_run(directory, seed, slow_point=None, broken_point=None, drop_point=None):
    for i, pid in enumerate(POINTS):
        if pid == drop_point:
            continue
        tpot = 40.0 * (1.2 if pid == slow_point else 1.0)
        store.write(
            record(pid, tpot_ms=tpot, seed=seed + i, verdict="fail" if pid == broken_point else "pass"), directory
        )
    return directory


@pytest.fixture
def saved(tmp_path):
    write_run(tmp_path / "night1", seed=0)
    assert (
        main(
            [
                "baseline",
                "save",
                str(tmp_path / "night1"),
                "--name",
                "nightly",
                "--baselines-dir",
                str(tmp_path / "baselines"),
            ]
        )
        == 0
    )
    return tmp_path


def harness_gate(tmp_path, run_dir, *extra):
    """``harness gate``: the regression check against the saved ``nightly`` baseline."""
    return main(["gate", str(run_dir), "--baseline", "nightly", "--baselines-dir", str(tmp_path / "baselines"), *extra])


def test_an_unchanged_rerun_passes(saved, capsys):
    assert harness_gate(saved, write_run(saved / "night2", seed=50)) == 0
    assert "regression check vs nightly: PASS; 2 point(s) compared" in capsys.readouterr().out


def test_a_20_percent_slowdown_fails_with_the_point_and_metric(saved, capsys):
    assert harness_gate(saved, write_run(saved / "night2", seed=50, slow_point=POINTS[1])) == 1
    out = capsys.readouterr().out
    assert f"FAIL demo::{POINTS[1]}: regression: tpot_ms" in out and "worse; limit 5%" in out
    assert POINTS[0] + ":" not in out


def test_broken_agreement_fails(saved, capsys):
    assert harness_gate(saved, write_run(saved / "night2", seed=50, broken_point=POINTS[0])) == 1
    assert f"FAIL demo::{POINTS[0]}: correctness: top-5 agreement fails" in capsys.readouterr().out


def test_a_missing_point_fails(saved, capsys):
    assert harness_gate(saved, write_run(saved / "night2", seed=50, drop_point=POINTS[0])) == 1
    assert f"FAIL demo::{POINTS[0]}: missing: ran in the baseline, no record now" in capsys.readouterr().out


def test_thresholds_come_from_the_command_line(saved):
    run_dir = write_run(saved / "night2", seed=50, slow_point=POINTS[1])
    assert harness_gate(saved, run_dir, "--max-regression", "tpot=30%") == 0


def test_bad_thresholds_and_unknown_baselines_are_usage_errors(saved, capsys):
    assert harness_gate(saved, saved / "night1", "--max-regression", "tpot=lots") == 2
    assert "ERROR --max-regression: 'tpot=lots'" in capsys.readouterr().err
    assert (
        main(["gate", str(saved / "night1"), "--baseline", "weekly", "--baselines-dir", str(saved / "baselines")]) == 2
    )
    assert "no baseline 'weekly' (saved baselines in" in capsys.readouterr().err


def test_saving_over_a_baseline_needs_replace(saved, capsys):
    args = ["baseline", "save", str(saved / "night1"), "--name", "nightly", "--baselines-dir", str(saved / "baselines")]
    assert main(args) == 2
    assert "pass --replace" in capsys.readouterr().err
    assert main([*args, "--replace"]) == 0
    assert main(["baseline", "list", "--baselines-dir", str(saved / "baselines")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nightly"


def test_a_baseline_is_a_frozen_copy(saved):
    import shutil

    shutil.rmtree(saved / "night1")  # the records it was saved from are gone
    assert harness_gate(saved, write_run(saved / "night2", seed=50)) == 0


def test_compare_prints_speedups(saved, capsys):
    write_run(saved / "night2", seed=0, slow_point=POINTS[1])
    assert (
        main(
            [
                "compare",
                "nightly",
                str(saved / "night2"),
                "--baselines-dir",
                str(saved / "baselines"),
                "--csv",
                str(saved / "cmp.csv"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "speedup" in out and "0.833" in out  # 1 / 1.2
    import pandas as pd

    table = pd.read_csv(saved / "cmp.csv")
    assert table.set_index("point_id").loc[POINTS[1], "speedup"] == pytest.approx(1 / 1.2, rel=0.01)


def test_a_non_record_file_is_named_in_the_error(tmp_path, capsys):
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    assert main(["report", str(bogus), "-o", str(tmp_path / "r")]) == 2
    assert f"{bogus}: neither a harness result record" in capsys.readouterr().err


def write_launched(directory, tpot_ms, launches=5, seed=0):
    """A point measured over ``launches`` launches, merged as the runner merges them (harness.measure.launch_stats)."""
    from harness.measure.launch_stats import combine, launch

    parts = []
    for i in range(launches):
        part = record(POINTS[0], tpot_ms=tpot_ms * (1 + 0.01 * (i - 2)), seed=seed + i)
        part.samples.launches = [launch(part.metrics, part.samples.rounds)]
        parts.append(part)
    store.write(combine(parts), directory)
    return directory


def test_a_regression_over_launches_prints_its_launches_and_p_and_q(tmp_path, capsys):
    write_launched(tmp_path / "night1", 40.0)
    assert (
        main(
            [
                "baseline",
                "save",
                str(tmp_path / "night1"),
                "--name",
                "nightly",
                "--baselines-dir",
                str(tmp_path / "baselines"),
            ]
        )
        == 0
    )
    assert harness_gate(tmp_path, write_launched(tmp_path / "same", 40.0, seed=50)) == 0
    out = capsys.readouterr().out
    assert "launch-level test of 2 metric(s)" in out and "judged without launch statistics" not in out
    assert harness_gate(tmp_path, write_launched(tmp_path / "slow", 48.0, seed=50)) == 1
    out = capsys.readouterr().out
    assert f"FAIL demo::{POINTS[0]}: regression: tpot_ms" in out and "5 vs 5 launches, Mann-Whitney p=0.004, q=" in out
    assert harness_gate(tmp_path, tmp_path / "slow", "--fdr", "0.001") == 0  # 1/252 is not below 0.001 / 2
    assert "too few launches to show it" in capsys.readouterr().out


def test_fdr_and_confirm_are_checked_before_anything_runs(saved, capsys):
    assert harness_gate(saved, saved / "night1", "--fdr", "5") == 2
    assert "--fdr: expected a false discovery rate between 0 and 1" in capsys.readouterr().err
    assert harness_gate(saved, saved / "night1", "--confirm", "-1") == 2
    assert "--confirm: expected a number of launches >= 0, got -1" in capsys.readouterr().err
    assert (
        main(
            [
                "gate",
                str(saved / "night1"),
                str(saved / "night1"),
                "--baseline",
                "nightly",
                "--baselines-dir",
                str(saved / "baselines"),
                "--confirm",
                "2",
            ]
        )
        == 2
    )
    assert "--confirm: expected NEW to be one results directory" in capsys.readouterr().err


def test_gate_help_shows_the_default_thresholds(capsys):
    # The default thresholds hold "%", which argparse's help formatting read as a format character.
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        main(["gate", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "tpot=5%,ttft=10%" in out and "--fdr" in out and "--confirm" in out


def test_present_only_judges_a_shards_points_and_still_fails_their_regressions(saved, capsys):
    shard = write_run(saved / "shard", seed=50, drop_point=POINTS[0])
    assert harness_gate(saved, shard) == 1  # the whole run's regression check: a point is missing
    capsys.readouterr()
    assert harness_gate(saved, shard, "--present-only") == 0
    assert "1 point(s) compared" in capsys.readouterr().out
    slow = write_run(saved / "slow-shard", seed=50, drop_point=POINTS[0], slow_point=POINTS[1])
    assert harness_gate(saved, slow, "--present-only") == 1


def test_confirm_refuses_a_record_naming_no_scenario_before_the_canary_calibrates(saved, capsys, monkeypatch):
    """A flagged point whose record names no scenario file cannot be rerun: one ERROR line, before the canary's
    calibration (its seconds, and on a busy machine its line on stderr, belong to reruns that happen)."""
    from harness.run.steps.caches import Caches

    monkeypatch.setattr(Caches, "calibrate_canary", lambda *a, **k: pytest.fail("the canary calibrated"))
    capsys.readouterr()
    assert harness_gate(saved, write_run(saved / "night2", seed=50, slow_point=POINTS[1]), "--confirm", "1") == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR "), err
    assert f"demo::{POINTS[1]}: the record names no scenario file to rerun (scenario_path)" in lines[0]
