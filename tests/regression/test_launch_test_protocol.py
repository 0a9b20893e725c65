"""The regression check's launch test is a protocol (``harness.regression.launch_test``): a statistic written
and registered here, in a test module, is selected by name through ``harness gate --launch-test`` and
through the entry both front ends call (``harness.regression.entry.run_check``), with no core file edited."""

from __future__ import annotations

import json
import statistics

import pytest

from harness.cli.app import main
from harness.regression import launch_test
from harness.regression.entry import run_check
from harness.regression.launch_test import Comparison, LaunchTest
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from tests.regression.test_baseline_compare_gate_commands import POINTS, write_launched


class MedianSign(LaunchTest):
    """A toy statistic: certain of a worsening whenever the new median is worse, of nothing otherwise."""

    name = "median-sign"
    label = "median-sign"
    description = "the toy median-sign test"
    min_launches = 3

    def compare(self, base, new, higher_is_better):
        rise = statistics.median(new) - statistics.median(base)
        worse = rise < 0 if higher_is_better else rise > 0
        return Comparison(worse_p=0.0 if worse else 1.0, better_p=1.0 if worse else 0.0)

    def min_p(self, n_base, n_new):
        return 0.0

    def detectable_change(self, cv, n_base, n_new, level, limit, higher_is_better):
        return None

    def launches_to_detect(self, cv, change, level, limit, higher_is_better):
        return None


@pytest.fixture
def toy():
    launch_test.register(MedianSign.name, MedianSign)
    yield MedianSign.name
    launch_test.unregister(MedianSign.name)


def save_nightly(tmp_path, tpot_ms, launches):
    write_launched(tmp_path / "night1", tpot_ms, launches=launches)
    argv = ["baseline", "save", str(tmp_path / "night1"), "--name", "nightly"]
    assert main([*argv, "--baselines-dir", str(tmp_path / "baselines")]) == 0


def gate(tmp_path, run_dir, *extra):
    return main(["gate", str(run_dir), "--baseline", "nightly", "--baselines-dir", str(tmp_path / "baselines"), *extra])


def test_a_statistic_registered_from_a_test_module_is_selected_by_harness_gate(tmp_path, toy, capsys):
    save_nightly(tmp_path, 40.0, launches=3)
    slower = write_launched(tmp_path / "slow", 40.6, launches=3)  # +1.5 %, the two sides' launches overlapping
    # Mann-Whitney, the default: past the 1 % limit, but overlapping launches are not significant
    assert gate(tmp_path, slower, "--max-regression", "tpot=1%") == 0
    assert "but not significant over 3 vs 3 launches" in capsys.readouterr().out
    # the toy is certain as soon as the median is worse: the same records fail, its words in the output
    json_path = tmp_path / "check.json"
    assert gate(tmp_path, slower, "--max-regression", "tpot=1%", "--launch-test", toy, "--json", str(json_path)) == 1
    out = capsys.readouterr().out
    assert f"FAIL demo::{POINTS[0]}: regression: tpot_ms" in out and "median-sign p=0, q=0" in out
    assert "launch-level test of 1 metric(s): the toy median-sign test, Benjamini-Hochberg FDR 0.05" in out
    written = json.loads(json_path.read_text())
    assert written["launch_test"] == toy and written["verdict"] == "fail"
    assert written["tests"][0]["p_value"] == 0.0 and written["tests"][0]["detectable"] is None


def test_the_entry_runs_the_statistic_its_settings_name_and_needs_its_launches(tmp_path, toy):
    from harness.records import store

    def records(directory):
        return [record for _, record in store.iter_records(directory)]

    base = records(write_launched(tmp_path / "base", 40.0, launches=3))
    new = records(write_launched(tmp_path / "new", 42.4, launches=3))
    settings = RegressionSettings(parse_thresholds("tpot=5%"), launch_test=toy, baseline="base")
    result = run_check(settings, base, new)
    assert result.exit_code == 1 and [t.p_value for t in result.outcome.tests] == [0.0]
    # two launches a side are fewer than the toy needs: no launch-level test, the one-launch rule instead
    two = records(write_launched(tmp_path / "two", 42.4, launches=2))
    assert run_check(settings, records(write_launched(tmp_path / "b2", 40.0, launches=2)), two).outcome.tests == []


def test_an_unknown_launch_test_is_refused_before_anything_is_read_with_the_closest_name(tmp_path, capsys):
    assert main(["gate", str(tmp_path / "absent"), "--baseline", "nightly", "--launch-test", "man-whitney"]) == 2
    err = capsys.readouterr().err
    assert "--launch-test: no launch test 'man-whitney'" in err and "did you mean 'mann-whitney'?" in err


def test_every_built_in_launch_test_calls_itself_by_its_registered_name():
    for name in launch_test.BUILT_IN:
        assert launch_test.get(name).name == name
    with pytest.raises(ValueError, match="already registered"):
        launch_test.register("mann-whitney", MedianSign)
