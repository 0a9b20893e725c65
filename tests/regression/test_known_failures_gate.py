"""Unit: `harness gate` reads a scenario's known failures as the run's verdict does (`record.known_failure`):
a known failure that still fails (its gate, its accuracy margin, the engine) is a KNOWN FAILURE line that
does not fail the check; one that now passes is a FIXED line, and fails the check when its entry is `strict`
(pytest's strict XPASS). Records written to disk, through the command."""

from __future__ import annotations

import json

import pytest

from harness import cli
from harness.records import store
from harness.records.accuracy import Accuracy
from harness.records.record import KnownFailure, Record
from tests.records import record


def known(made: Record, reason: str = "bug 7", strict: bool = False) -> Record:
    return made.model_copy(update={"known_failure": KnownFailure(reason=reason, strict=strict)})


def gate(tmp_path, capsys, now: Record, *options: str) -> tuple[int, str]:
    """Save a passing baseline of the point, write ``now`` as the new run and gate it."""
    store.write(record(seed=0), tmp_path / "before")
    store.write(now, tmp_path / "after")
    baselines = ["--baselines-dir", str(tmp_path / "b")]
    assert cli.main(["baseline", "save", str(tmp_path / "before"), "--name", "one", *baselines]) == 0
    capsys.readouterr()
    code = cli.main(["gate", str(tmp_path / "after"), "--baseline", "one", *baselines, *options])
    return code, capsys.readouterr().out


FAILING = {
    "gate": lambda: record(seed=1, verdict="fail"),
    "accuracy": lambda: record(seed=1).model_copy(update={"accuracy": Accuracy(verdict="fail")}),
    "engine": lambda: record(status="failed"),
}


@pytest.mark.parametrize("how", sorted(FAILING))
def test_a_known_failure_that_still_fails_is_told_and_passes_the_gate(tmp_path, capsys, how):
    code, out = gate(tmp_path, capsys, known(FAILING[how]()))
    assert code == 0, out
    assert "KNOWN FAILURE demo::hf-cpu-bf16: " in out and "(expected: bug 7)" in out, out
    assert "FAIL demo::hf-cpu-bf16" not in out
    assert out.rstrip().splitlines()[-1].endswith("; 1 known failure(s) still failing"), out


@pytest.mark.parametrize("how", sorted(FAILING))
def test_the_same_failure_not_listed_as_known_fails_the_gate(tmp_path, capsys, how):
    code, out = gate(tmp_path, capsys, FAILING[how]())
    assert code == 1, out
    assert "KNOWN FAILURE" not in out


def test_a_known_failure_that_passes_is_fixed(tmp_path, capsys):
    code, out = gate(tmp_path, capsys, known(record(seed=1)), "--json", str(tmp_path / "gate.json"))
    assert code == 0, out
    assert "FIXED demo::hf-cpu-bf16: known failure now passes: bug 7" in out.splitlines(), out
    assert out.rstrip().splitlines()[-1].endswith("; 1 known failure(s) fixed"), out
    written = json.loads((tmp_path / "gate.json").read_text())
    assert written["fixed"] == [
        {"scenario": "demo", "point_id": "hf-cpu-bf16", "message": "known failure now passes: bug 7"}
    ]


def test_a_strict_known_failure_that_passes_fails_the_gate(tmp_path, capsys):
    code, out = gate(tmp_path, capsys, known(record(seed=1), strict=True))
    assert code == 1, out
    assert (
        "FAIL demo::hf-cpu-bf16: fixed (strict): known failure now passes: bug 7; remove it from the "
        "scenario's known_failures"
    ) in out.splitlines(), out


def test_a_strict_known_failure_that_still_fails_passes_the_gate(tmp_path, capsys):
    code, out = gate(tmp_path, capsys, known(record(seed=1, verdict="fail"), strict=True))
    assert code == 0, out
    assert "KNOWN FAILURE demo::hf-cpu-bf16: " in out


def test_confirm_keeps_the_known_failures_and_tells_a_strict_fix_once():
    """`harness gate --confirm K` judges the flagged points again on their new launches: the known failures
    (and NOT JUDGED points) the first check told stay told, and a strict known failure that passes is one
    finding, not two."""
    from harness.regression.entry import Confirmation, run_check
    from harness.regression.settings import RegressionSettings
    from harness.regression.thresholds import parse_thresholds
    from tests.records import launch_record

    quick = [50.0, 50.5, 49.5, 50.2, 49.8]
    slow = [60.0, 60.5, 59.5, 60.2, 59.8]
    fixed = known(launch_record(*slow, point_id="a"), "bug 1", strict=True)
    still = known(launch_record(*quick, point_id="b", correctness=record(verdict="fail").correctness), "bug 2")

    def rerun(records, launches):
        return [made.model_copy(update={"samples": launch_record(*slow, *slow[:launches]).samples}) for made in records]

    settings = RegressionSettings(parse_thresholds("tpot=5%"))
    unjudged = launch_record(*quick, point_id="c", correctness=record(verdict="not judged").correctness)
    base = [launch_record(*quick, point_id=point) for point in "abc"]
    outcome = run_check(settings, base, [fixed, still, unjudged], confirmation=Confirmation(5, rerun)).outcome
    assert any("--confirm 5: reran demo::a" in note for note in outcome.notes), outcome.notes
    assert [(f.point_id, f.kind) for f in outcome.findings] == [("a", "fixed (strict)"), ("a", "regression")]
    assert [f.point_id for f in outcome.known] == ["b"] and [f.point_id for f in outcome.not_judged] == ["c"]
