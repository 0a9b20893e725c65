"""`pytest scenarios/ -m nightly` selects the shipped CPU nightly: the scenarios marked `markers: [nightly]`,
every point of them on the CPU, the marker registered; `scenarios/quantization.yaml` no longer skips most of
its points (every point is one an engine here runs), and `harness plan` plans the nightly within its stated
budget."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
NIGHTLY = {"quickstart.yaml", "quantization.yaml", "moe_capacity.yaml", "moe_chunks.yaml"}  # docs/nightly-ci.md


def marked_nightly() -> set[str]:
    return {
        path.name
        for path in SCENARIOS.glob("*.yaml")
        if "nightly" in (yaml.safe_load(path.read_text(encoding="utf-8")).get("markers") or [])
    }


def test_minus_m_nightly_collects_the_cpu_scenarios_only(pytester):
    assert marked_nightly() == NIGHTLY  # the set docs/nightly-ci.md names
    result = pytester.runpytest(str(SCENARIOS), "-m", "nightly", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    ids = [line for line in result.stdout.lines if ".yaml::" in line]
    assert {Path(line.split("::")[0]).name for line in ids} == NIGHTLY
    assert len(ids) == 33  # the count docs/nightly-ci.md states
    devices = {line.split("::")[1].split("-")[1] for line in ids}
    assert devices <= {"cpu", "CPU"}, devices  # nothing that needs a device


def test_the_nightly_marker_is_registered(pytester):
    result = pytester.runpytest("--markers", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["@pytest.mark.nightly: scenarios a CPU runner can run in a nightly*"])


def plan(*argv: str) -> tuple[int, str]:
    """`harness plan` in its own process (engines list their devices there; a pytester run in this one leaves
    them half-imported)."""
    done = subprocess.run([sys.executable, "-m", "harness.cli", "plan", *argv], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def test_quantization_runs_every_point_it_lists_and_the_nightly_fits_its_budget(tmp_path):
    code, out = plan(str(SCENARIOS / "quantization.yaml"), "--budget", "60m", "--results", str(tmp_path))
    assert code == 0, out
    assert "6 of 6 point(s)" in out and "left out" not in out, out
    code, out = plan(
        *(str(SCENARIOS / name) for name in sorted(NIGHTLY)), "--budget", "60m", "--results", str(tmp_path)
    )
    assert code == 0, out
    assert "33 of 33 point(s), each scenario's own launches" in out, out


def test_harness_plan_minus_m_selects_what_pytest_minus_m_collects(pytester, tmp_path):
    expression = "nightly and not openvino"  # a scenario marker and an adapter's, as on the plugin's items
    arguments = (str(SCENARIOS), "-m", expression, "--collect-only", "-q", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*arguments)  # its own process: engines half-imported here break it
    assert result.ret == 0, result.stdout.str()
    collected = {
        f"{Path(line.split('::')[0]).stem}::{line.split('::')[1]}" for line in result.stdout.lines if ".yaml::" in line
    }
    code, out = plan(str(SCENARIOS), "-m", expression, "--budget", "60m", "--results", str(tmp_path))
    assert code == 0, out
    planned = {line.split(": ")[0].strip() for line in out.splitlines() if line.startswith("  ") and "::" in line}
    assert planned == collected and len(collected) == 21, (planned ^ collected, out)


def test_the_capacity_study_s_expected_gate_failures_leave_the_nightly_green(pytester):
    """A capped MoE point leaves the unlimited reference by design (what the capacity costs is the study's
    answer): the scenario declares it a known failure, so the nightly reports it as xfail, not as a red night."""
    result = pytester.runpytest_subprocess(
        str(SCENARIOS / "moe_capacity.yaml"),
        "-m",
        "nightly",
        "-k",
        "cap2",
        "-p",
        "no:cacheprovider",
        "--harness-results",
        str(pytester.path / "results"),
    )
    outcomes = result.parseoutcomes()
    assert result.ret == 0, result.stdout.str()
    assert outcomes.get("xfailed") == 1 and "failed" not in outcomes, outcomes
    result.stdout.fnmatch_lines(["*capacity 2 drops tokens*"])
