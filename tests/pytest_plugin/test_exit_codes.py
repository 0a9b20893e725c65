"""The pytest front end's exit codes that no other test reaches through pytest itself (docs/running-sweeps.md,
"Exit codes"): 3 when `--harness-baseline` ran on another fingerprint, named in the regression section."""

from __future__ import annotations

from tests.records import record
from tests.tiny_scenario import tiny


def test_a_baseline_of_another_engine_version_exits_3_and_says_incomparable(pytester, fake_adapters):
    from harness.records import store
    from harness.records.engine import EngineInfo
    from harness.regression import baseline

    scenario = pytester.path / "scenarios" / "sweep.yaml"
    scenario.parent.mkdir()
    scenario.write_text(tiny(name="sweep"))
    made = record("fake-cpu-bf16", scenario="sweep", adapter="fake", tpot_ms=2.0, ttft_ms=5.0, verdict=None)
    made.engine = EngineInfo(name="fake", version="999")  # the session runs fake version 0
    store.write(made, pytester.path / "base-records")
    baseline.save([pytester.path / "base-records"], "nightly", pytester.path / "baselines")
    gated = ("--harness-baseline", "nightly", "--harness-baselines-dir", "baselines", "-p", "no:cacheprovider")
    result = pytester.runpytest("scenarios/", *gated)
    result.assert_outcomes(passed=1)
    assert result.ret == 3, result.stdout.str()
    result.stdout.fnmatch_lines(["*harness regression check*", "*INCOMPARABLE*sweep::fake-cpu-bf16*engine_version*"])
