"""Acceptance (issue #30): under pytest, `--harness-baseline` gives the gate's verdict options —
`--harness-fail-on-unknown` (exit 4 when nothing failed but a comparison is inconclusive) and
`--harness-regression-json FILE` (the JSON `harness gate --json` writes) — on a real tiny engine (transformers,
tiny-llama) in real pytest sessions."""

from __future__ import annotations

import json
import re

import pytest

from harness import cli
from harness.records import store
from tests.tiny_scenario import tiny

pytest.importorskip("torch")

SCENARIO = tiny(
    name="verdicts",
    generation={"max_new_tokens": 3},
    measurement={"min_rounds": 2, "threads": 1, "launches": 3},
    sweep={"adapter": ["hf"], "device": ["cpu"]},
)
RUN = ("scenario.yaml", "--harness-isolation", "none", "--harness-no-energy", "-p", "no:cacheprovider")
# The baseline's launches: medians times 1/20 and 20 in turn. The session's own launches fall between them
# whatever the machine's load: on a loaded CI machine they ran 2.4x the baseline run's ms/token, above every
# launch of a 0.5x / 1.5x scatter, and the check called that a significant regression instead of inconclusive.
WILD = (0.05, 20.0)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """A night's records (``harness run``) saved as baseline ``wild`` with its launches scattered far wider
    than any limit (each launch's medians times ``WILD``): against it a comparison is neither different
    nor the same."""
    root = tmp_path_factory.mktemp("wild")
    (root / "scenario.yaml").write_text(SCENARIO.lstrip())
    argv = ["run", str(root / "scenario.yaml"), "--results", str(root / "night"), "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy"]) == 0
    saved_to = root / "baselines"
    assert cli.main(["baseline", "save", str(root / "night"), "--name", "wild", "--baselines-dir", str(saved_to)]) == 0
    for path, saved in store.iter_records([saved_to / "wild"]):
        for launch in saved.samples.launches:
            launch.medians = {k: v * WILD[launch.index % 2] for k, v in launch.medians.items()}
            launch.excluded = None  # every baseline launch counts, whatever the machine's load when it ran
        path.write_text(json.dumps(saved.to_dict()))
    return saved_to


@pytest.fixture
def wild_baseline(pytester, baselines, tiny_llama):
    pytester.makefile(".yaml", scenario=SCENARIO)
    return (
        "--harness-baseline",
        "wild",
        "--harness-baselines-dir",
        str(baselines),
        "--harness-max-regression",
        "tpot=5%",
    )


def test_an_inconclusive_session_exits_4_under_fail_on_unknown_and_writes_the_regression_json(pytester, wild_baseline):
    out = pytester.path / "gate.json"
    result = pytester.runpytest(
        *RUN,
        "--harness-results",
        "again",
        *wild_baseline,
        "--harness-fail-on-unknown",
        "--harness-regression-json",
        str(out),
    )
    result.assert_outcomes(passed=1)
    assert result.ret == 4, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*harness regression check*",
            "UNKNOWN verdicts::hf-cpu-bf16 tpot_ms: *; inconclusive: *",
            "inconclusive: 1 of 1 launch-level comparison(s) *; --harness-fail-on-unknown exits 4 on them",
            "regression check vs wild: PASS; 1 point(s) compared; 0 different, 0 same, 1 unknown",
        ]
    )
    saved = json.loads(out.read_text())  # the same document `harness gate --json` writes
    assert saved["baseline"] == "wild" and saved["verdict"] == "pass" and saved["exit_code"] == 4
    assert saved["inconclusive"] == 1 and saved["compared"] == 1
    (test,) = saved["tests"]
    # Launches the machine-state check excluded (a loaded CI machine) leave the test, unless fewer than two
    # would be left: then the test counts them all (and says so).
    found = re.search(
        r"as disturbed .* in 1 point\(s\): verdicts::hf-cpu-bf16 \((?:baseline \d of 3, )?new (\d) of 3",
        result.stdout.str(),
    )
    excluded = int(found.group(1)) if found else 0
    counted = 3 - excluded if 3 - excluded >= 2 else 3
    assert test["verdict"] == "unknown" and test["metric"] == "tpot_ms" and len(test["new_values"]) == counted
    # "about N launches a side would decide it": more than the smaller side has (3 baseline launches, all counted).
    assert test["launches_needed"] is None or test["launches_needed"] > min(3, counted)


def test_without_the_flag_an_inconclusive_session_passes_and_says_so(pytester, wild_baseline):
    result = pytester.runpytest(*RUN, "--harness-results", "again", *wild_baseline)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["inconclusive: 1 of 1 launch-level comparison(s) *", "regression check vs wild: PASS*"]
    )


def test_an_unwritable_regression_json_stops_pytest_before_anything_runs(pytester, wild_baseline):
    (pytester.path / "taken").mkdir()
    result = pytester.runpytest(
        *RUN, "--harness-results", "again", *wild_baseline, "--harness-regression-json", "taken"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-regression-json*taken*"])
    assert not (pytester.path / "again").exists()  # refused before any point ran
    alone = pytester.runpytest(*RUN, "--harness-regression-json", "gate.json")  # no gate to report
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--harness-regression-json gate.json: needs --harness-baseline NAME*"])
