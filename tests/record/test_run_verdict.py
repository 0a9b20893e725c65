"""The run's account (``harness.records.verdict``), pure: what each kind of record adds to it, and that a
status it does not know is never read as a pass."""

from __future__ import annotations

from harness.records.accuracy import Accuracy
from harness.records.record import KnownFailure
from harness.records.verdict import account
from tests.records import record


def test_a_status_this_harness_does_not_know_is_listed_and_fails_the_run():
    done = record("a", scenario="s")
    cut = record("b", scenario="s").model_copy(update={"status": "incomplete", "reason": "2 of 5 launches"})
    verdict = account([done, cut])
    assert verdict.count_line() == "2 points (1 ok, 1 incomplete)"
    assert "NOT COMPLETE s::b: incomplete: 2 of 5 launches" in verdict.lines()
    assert verdict.exit_code() == 1 and verdict.exit_line() == "exit 1: 1 point(s) not complete"


def test_an_ok_point_with_a_failed_margin_is_a_failure_and_the_count_says_so():
    failed = record("a", scenario="s").model_copy(update={"accuracy": Accuracy(verdict="fail")})
    verdict = account([failed])
    assert verdict.count_line() == "1 points (1 ok); 1 ok point(s) failed a verdict (gate or accuracy margin)"
    assert verdict.lines()[1].startswith("FAILED s::a: task accuracy below its non-inferiority margin")
    assert verdict.exit_code() == 1


def test_known_failures_fixed_and_expected_and_required_skips():
    fixed = record("a", scenario="s").model_copy(update={"known_failure": KnownFailure(reason="bug 1")})
    expected = record("b", scenario="s", status="failed").model_copy(
        update={"reason": "boom", "known_failure": KnownFailure(reason="bug 2")}
    )
    skipped = record("c", scenario="t", status="skipped").model_copy(update={"reason": "no NPU"})
    verdict = account([fixed, expected, skipped], required={"t"})
    assert [str(note) for note in verdict.fixed] == ["s::a: bug 1"]
    assert [str(note) for note in verdict.expected] == ["s::b: boom"]
    assert verdict.skip_line() == "1 skipped: 1 × no NPU"
    assert verdict.exit_line() == "exit 1: 1 required point(s) skipped"
    assert account([fixed, expected, skipped]).exit_code() == 0  # nothing required, nothing strict
    strict = fixed.model_copy(update={"known_failure": KnownFailure(reason="bug 1", strict=True)})
    assert account([strict]).exit_code() == 1


def test_a_record_without_a_known_failure_stores_none_of_it():
    from harness.records.record import Record

    plain = record("a", scenario="s")
    assert "known_failure" not in plain.to_dict()
    marked = plain.model_copy(update={"known_failure": KnownFailure(reason="bug 1")})
    assert Record.from_dict(marked.to_dict()).known_failure == KnownFailure(reason="bug 1")
