"""The regression check's correctness side, word for word: a gate verdict that changed between the baseline and
the new run (and only one that changed, on two gated sides), a gate that could not judge (with every reason
it gives), and the note on points compared on correctness only (a side written by ``harness verify``)."""

from __future__ import annotations

import pytest

from harness.records.gate_verdicts import NOT_JUDGED
from harness.regression.check import check
from harness.regression.settings import RegressionSettings
from tests.records import record


def _check(baseline, new):
    return check(baseline, new, RegressionSettings(thresholds=[]))


def test_passing_gates_on_both_sides_give_no_verdict_change_and_nothing_not_judged():
    outcome = _check([record(seed=0)], [record(seed=1)])
    assert outcome.verdict_changes == [] and outcome.not_judged == []


def test_a_side_without_a_gate_is_no_verdict_change():
    for before, after in ((None, "pass"), ("pass", None)):
        outcome = _check([record(seed=0, verdict=before)], [record(seed=1, verdict=after)])
        assert outcome.verdict_changes == [], (before, after)


def test_a_verdict_that_changed_is_one_verdict_change():
    outcome = _check([record(seed=0)], [record(seed=1, verdict="drift")])
    changes = [(c.scenario, c.point_id, c.before, c.after) for c in outcome.verdict_changes]
    assert changes == [("demo", "hf-cpu-bf16", "pass", "drift")]


def test_a_gate_that_could_not_judge_is_not_judged_with_every_reason():
    new = record(seed=1)
    correctness = new.correctness.model_copy(update={"verdict": NOT_JUDGED, "reasons": ["too few positions", "x"]})
    outcome = _check([record(seed=0)], [new.model_copy(update={"correctness": correctness})])
    found = [(f.scenario, f.point_id, f.kind, f.message) for f in outcome.not_judged]
    assert found == [("demo", "hf-cpu-bf16", "not judged", "correctness: too few positions; x")]


def test_a_known_failure_is_told_with_its_failure_and_one_now_not_judged_is_fixed_and_not_judged():
    from harness.records.record import KnownFailure

    expected = KnownFailure(reason="bug 7", strict=False)
    failing = record(seed=1, verdict="fail").model_copy(update={"known_failure": expected})
    (told,) = _check([record(seed=0)], [failing]).known
    assert told.message == "gate: reference token 17 not in device top-5 at prompt 0 position 3 (expected: bug 7)"
    unjudged = record(seed=1)
    correctness = unjudged.correctness.model_copy(update={"verdict": NOT_JUDGED, "reasons": ["too few positions"]})
    unjudged = unjudged.model_copy(update={"correctness": correctness, "known_failure": expected})
    outcome = _check([record(seed=0)], [unjudged])
    assert [f.kind for f in outcome.fixed] == ["fixed"] and [f.kind for f in outcome.not_judged] == ["not judged"]


@pytest.mark.parametrize("verify_side", ["new", "baseline"])
def test_one_gate_only_side_is_enough_for_the_correctness_only_note(verify_side):
    before, after = record(seed=0), record(seed=1)
    if verify_side == "new":
        after = after.as_correctness_only()
    else:
        before = before.as_correctness_only()
    notes = [n for n in _check([before], [after]).notes if "correctness only" in n]
    assert notes == [
        "1 point(s) compared on correctness only, a side being a gate-only record (harness verify: no timing): "
        "demo::hf-cpu-bf16"
    ]


@pytest.mark.parametrize("count, tail", [(5, ""), (6, " and 1 more"), (7, " and 2 more")])
def test_the_correctness_only_note_names_five_points_then_counts_the_rest(count, tail):
    ids = [f"p{i}" for i in range(count)]
    baseline = [record(point_id=i, seed=0) for i in ids]
    new = [record(point_id=i, seed=1).as_correctness_only() for i in ids]
    notes = [n for n in _check(baseline, new).notes if "correctness only" in n]
    named = ", ".join(f"demo::{i}" for i in ids[:5])
    assert notes == [
        f"{count} point(s) compared on correctness only, a side being a gate-only record (harness verify: no "
        f"timing): {named}{tail}"
    ]
