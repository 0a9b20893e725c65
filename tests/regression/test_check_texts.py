"""The regression check's printed texts, branches and boundaries (harness.regression.check), on hand-built
records: every finding, note and refusal pinned word for word, in order. Each assertion is here because a
mutant of check.py survived without it (``python benchmarks/mutation.py regression/check``)."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.records.accuracy import Accuracy, PairedDelta
from harness.records.correctness import Correctness
from harness.records.record import Record
from harness.records.samples import Samples
from harness.regression.check import check, index
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from tests.records import launch_record

TPOT = parse_thresholds("tpot=5%")[0]


def _record(point_id="p", status="ok", scenario="demo", **fields) -> Record:
    return Record(scenario=scenario, point_id=point_id, point={}, status=status, **fields)


def _texts(outcome) -> list[str]:
    return [str(f) for f in outcome.findings]


# --- refusals ---------------------------------------------------------------------------------------


def test_the_same_point_twice_is_refused_with_its_side_and_name():
    with pytest.raises(UsageError) as found:
        index([_record(), _record()], "new records")
    assert str(found.value) == (
        "new records: point demo::p appears twice; combine records from several runners with `harness merge` first"
    )
    with pytest.raises(UsageError, match=r"^baseline: point demo::p appears twice"):
        check([_record(), _record()], [_record()], RegressionSettings([TPOT]))
    with pytest.raises(UsageError, match=r"^new records: point demo::p appears twice"):
        check([_record()], [_record(), _record()], RegressionSettings([TPOT]))
    assert list(index([_record("a"), _record("b")], "x")) == [("demo", "a"), ("demo", "b")]


def test_an_empty_baseline_or_one_with_nothing_in_common_is_refused():
    with pytest.raises(UsageError) as found:
        check([], [_record()], RegressionSettings([TPOT]))
    assert str(found.value) == (
        "the baseline holds no records, so nothing can be compared; save one from a complete run with "
        "`harness baseline save`"
    )
    with pytest.raises(UsageError) as found:
        check([_record("a", scenario="b2"), _record("b", scenario="a1")], [_record("c")], RegressionSettings([TPOT]))
    assert str(found.value) == (
        "the baseline has no records in common with the results, so nothing can be compared (baseline: 2 "
        "point(s) of scenarios a1, b2; results: 1 point(s) of scenarios demo)"
    )
    with pytest.raises(UsageError, match=r"results: 0 point\(s\) of scenarios none\)$"):
        check([_record()], [], RegressionSettings([TPOT]))
    with pytest.raises(UsageError, match=r"^the baseline has no records in common"):  # common, but out of scope
        check([_record()], [_record()], RegressionSettings([TPOT]), scope={("demo", "other")})
    assert check([_record()], [_record()], RegressionSettings([TPOT]), scope={("demo", "p")}).compared == 1


# --- failures, agreement and accuracy ---------------------------------------------------------------


def test_failed_and_timed_out_points_fail_unless_the_baseline_failed_too():
    base = [
        _record("a"),
        _record("b", status="timeout"),
        _record("c", status="failed"),
        _record("d", status="failed"),
        _record("e"),
    ]
    new = [
        _record("a", status="failed", reason="boom"),
        _record("b", status="failed", reason="again"),
        _record("c", status="timeout", reason="slow"),
        _record("d", status="failed", reason="x"),
        _record("e", status="timeout", reason="hung"),
        _record("f", status="failed", reason="new point"),  # not in the baseline at all
    ]
    outcome = check(base, new, RegressionSettings([TPOT]))
    assert _texts(outcome) == [
        "FAIL demo::a: failed: failed: boom",
        "FAIL demo::e: failed: timeout: hung",
        "FAIL demo::f: failed: failed: new point",
    ]
    assert outcome.notes == [
        "demo::b: still failed, as in the baseline",
        "demo::c: still timeout, as in the baseline",
        "demo::d: still failed, as in the baseline",
    ]
    assert outcome.compared == 0 and outcome.exit_code == 1


def test_a_failed_agreement_and_a_failed_margin_are_findings_with_their_reasons():
    margin = PairedDelta(delta=-0.1, low=-0.2, high=-0.05, p_value=0.01, test="mcnemar", items=100, reference=0.5)
    margin = margin.model_copy(update={"margin": 0.05, "non_inferior": False})
    new = [
        _record("a", correctness=Correctness(verdict="fail", k=5, reasons=["first", "second"])),
        _record("b", correctness=Correctness(verdict="fail", k=3)),
        _record("c", correctness=Correctness(verdict="pass", k=3, reasons=["ignored"])),
        _record("d", accuracy=Accuracy(verdict="fail")),
        _record("e", accuracy=Accuracy(verdict="fail", paired={"arc": {"acc": margin}})),
        _record("f", accuracy=Accuracy(verdict="pass", paired={"arc": {"acc": margin}})),
        _record("g", accuracy=Accuracy(verdict="fail", paired={"arc": {"acc": margin, "acc_norm": margin}})),
    ]
    outcome = check([_record(r.point_id) for r in new], new, RegressionSettings([TPOT]))
    assert _texts(outcome) == [
        "FAIL demo::a: correctness: gate fails: first; second",
        "FAIL demo::b: correctness: gate fails: see the record",
        "FAIL demo::d: accuracy: non-inferiority margin fails: see the record's accuracy part",
        "FAIL demo::e: accuracy: non-inferiority margin fails: arc.acc: -0.1 [-0.2, -0.05], margin 0.05",
        "FAIL demo::g: accuracy: non-inferiority margin fails: arc.acc: -0.1 [-0.2, -0.05], margin 0.05, "
        "arc.acc_norm: -0.1 [-0.2, -0.05], margin 0.05",
    ]
    assert outcome.compared == 7


# --- points lost, skipped, out of scope, incomparable -------------------------------------------------


def test_points_lost_or_skipped_since_the_baseline_fail_and_those_that_did_not_run_then_do_not():
    base = [
        _record("failed-now"),
        _record("gone"),
        _record("skipped-now"),
        _record("was-skipped", status="skipped"),
        _record("was-failed", status="failed"),
        _record("out-of-scope"),
        _record("kept"),
    ]
    new = [
        _record("failed-now", status="failed", reason="r"),
        _record("skipped-now", status="skipped", reason="no device"),
        _record("kept"),
    ]
    scope = {("demo", p.point_id) for p in base} - {("demo", "out-of-scope")}
    outcome = check(base, new, RegressionSettings([TPOT]), scope=scope)
    assert _texts(outcome) == [
        "FAIL demo::failed-now: failed: failed: r",
        "FAIL demo::gone: missing: ran in the baseline, no record now",
        "FAIL demo::skipped-now: skipped: ran in the baseline, skipped now: no device",
    ]
    assert outcome.compared == 1 and outcome.notes == []


def test_a_point_whose_fingerprint_differs_is_incomparable_unless_the_difference_is_accepted():
    def side(engine, dtype, point_id="p"):
        return _record(point_id, engine={"name": engine, "dtype": dtype})

    base, new = [side("cpu", "f32"), side("cpu", "f32", "q")], [side("gpu", "f16"), side("cpu", "f32", "q")]
    outcome = check(base, new, RegressionSettings([TPOT]))
    (finding,) = outcome.incomparable
    assert str(finding) == (
        "INCOMPARABLE demo::p: engine: 'cpu' -> 'gpu'; dtype: 'f32' -> 'f16' (baseline -> new); figures not judged "
        "— rerun the baseline here, or pass --accept-difference engine,dtype to compare anyway"
    )
    assert finding.kind == "incomparable" and outcome.findings == [] and outcome.compared == 1
    partly = check(base, new, RegressionSettings([TPOT], accept=frozenset({"engine"}))).incomparable
    assert [f.message.split(" (")[0] for f in partly] == ["dtype: 'f32' -> 'f16'"]
    accepted = check(base, new, RegressionSettings([TPOT], accept=frozenset({"engine", "dtype"})))
    assert accepted.incomparable == [] and accepted.compared == 2


# --- notes on compared points -------------------------------------------------------------------------


def test_excluded_and_disturbed_launches_are_noted_once_for_all_points():
    base = launch_record(10.0, 10.1, 10.2, excluded=(0, 1))
    new = launch_record(10.0, 10.1, 10.2, 10.3, excluded=(0, 1, 2))
    failed = _record("f", status="failed")  # a note before them: theirs are added to it, not put in its place
    other = [launch_record(10.0, 10.1, 10.2, excluded=(0,), point_id=f"q{i}") for i in range(10)]
    quiet = [launch_record(10.0, 10.1, 10.2, point_id=f"q{i}") for i in range(10)]
    notes = check([failed, base, *quiet], [failed, new, *other], RegressionSettings([TPOT])).notes
    grouped = [note for note in notes if "disturbed" in note]
    assert notes[0] == "demo::f: still failed, as in the baseline"
    assert grouped == [
        "launches excluded from the significance test as disturbed (kept in the records; the run table and "
        "summary give each reason) in 11 point(s): demo::p (baseline 2 of 3, new 3 of 4), "
        + ", ".join(f"demo::q{i} (new 1 of 3)" for i in range(7))
        + " and 3 more",
        "under two undisturbed launches in 1 point(s), so the significance test counts the disturbed ones too; "
        "their figures may be the machine's, not the build's — rerun on a quiet machine: demo::p (baseline, new)",
    ]
    single = check(
        [launch_record(10.0, point_id="s")],
        [launch_record(10.0, excluded=(0,), point_id="s")],
        RegressionSettings([TPOT]),
    )
    assert not any("disturbed" in note for note in single.notes)  # one launch: no significance test to leave it out of


def test_agreement_going_from_pass_to_drift_is_noted_and_nothing_else_is():
    def side(verdict, point_id):
        return _record(point_id, correctness=Correctness(verdict=verdict, k=5))

    pairs = [("pass", "drift"), ("drift", "drift"), ("pass", "pass"), ("drift", "pass"), ("pass", "drift")]
    base = [side(b, f"p{i}") for i, (b, _) in enumerate(pairs)]
    new = [side(n, f"p{i}") for i, (_, n) in enumerate(pairs)]
    assert check(base, new, RegressionSettings([TPOT])).notes == [
        "demo::p0: agreement went from pass to drift",
        "demo::p4: agreement went from pass to drift",
    ]


# --- the one-launch rule through the check ------------------------------------------------------------


def test_one_launch_points_are_listed_once_each_and_the_list_is_cut_at_five():
    two = parse_thresholds("tpot=5%,ttft=10%")

    def side(point_id, value):
        return _record(point_id, metrics={"tpot_ms": value, "ttft_ms": value})

    def note(outcome):
        return outcome.notes[-1]

    five = check(
        [side(f"p{i}", 50.0) for i in range(5)], [side(f"p{i}", 50.0) for i in range(5)], RegressionSettings(two)
    )
    assert five.single_launch == [("demo", f"p{i}") for i in range(5)]
    assert note(five) == (
        "5 point(s) judged without launch statistics (under two launches measured a metric on a side): "
        "demo::p0, demo::p1, demo::p2, demo::p3, demo::p4; threshold and per-round spread only, which "
        "launch-to-launch noise can trip; set measurement.launches: 5 (baseline and new run) for a launch-level test"
    )
    seven = check(
        [side(f"p{i}", 50.0) for i in range(7)], [side(f"p{i}", 50.0) for i in range(7)], RegressionSettings(two)
    )
    assert note(seven).startswith(
        "7 point(s) judged without launch statistics (under two launches measured a metric on a side): "
        "demo::p0, demo::p1, demo::p2, demo::p3, demo::p4 and 2 more; threshold"
    )
    six = check(
        [side(f"p{i}", 50.0) for i in range(6)], [side(f"p{i}", 50.0) for i in range(6)], RegressionSettings(two)
    )
    assert "demo::p4 and 1 more; threshold" in note(six)
    assert check([side("p", 50.0)], [side("p", 50.0)], RegressionSettings(two)).notes == [
        "1 point(s) judged without launch statistics (under two launches measured a metric on a side): "
        "demo::p; threshold and per-round spread only, which launch-to-launch noise can trip; set "
        "measurement.launches: 5 (baseline and new run) for a launch-level test"
    ]


def test_a_one_launch_change_within_the_spread_is_a_note_and_past_it_a_finding():
    def side(point_id, value, rounds):
        return _record(point_id, metrics={"tpot_ms": value}, samples=Samples(rounds_ms={"tpot_ms": rounds}))

    outcome = check(
        [side("a", 50.0, [40.0, 60.0]), side("b", 50.0, [49.0, 51.0])],
        [side("a", 60.0, []), side("b", 60.0, [])],
        RegressionSettings([TPOT]),
    )
    assert outcome.notes[0] == "demo::a: tpot_ms +20.0% is within the measured spread (10)"
    (finding,) = outcome.findings
    assert str(finding) == "FAIL demo::b: regression: tpot_ms 50 -> 60 (+20.0% worse; limit 5%, measured spread 1)"
    assert finding.metric == "tpot_ms" and finding.test is None
    assert outcome.beyond_limit == [("demo", "a"), ("demo", "b")] and outcome.tests == []


# --- the launch-level test: findings and notes ---------------------------------------------------------

_LAUNCH_NOTE = "launch-level test of 1 metric(s): one-sided Mann-Whitney U, Benjamini-Hochberg FDR 0.05"


def test_a_significant_regression_is_a_finding_with_its_test_and_interval():
    outcome = check([launch_record(10.0, 10.1, 10.2)], [launch_record(12.0, 12.1, 12.2)], RegressionSettings([TPOT]))
    (finding,) = outcome.findings
    (test,) = outcome.tests
    assert str(finding) == (
        "FAIL demo::p: regression: tpot_ms 10.1 -> 12.1 (+19.8% worse; limit 5%; 3 vs 3 launches, "
        "Mann-Whitney p=0.05, q=0.05; ratio 1.198 [95% CI 1.176, 1.220])"
    )
    assert finding.kind == "regression" and finding.metric == "tpot_ms" and finding.test is test
    assert test.p_value == pytest.approx(0.05) and test.q_value == pytest.approx(0.05)
    assert test.verdict == "different"
    # 3 vs 3 launches reach p = 0.05 = fdr / 1 exactly: enough, so no power note
    assert outcome.notes == [_LAUNCH_NOTE] and outcome.beyond_limit == [("demo", "p")]


def test_a_regression_without_spread_has_no_interval_in_its_message():
    outcome = check([launch_record(10.0, 10.0, 10.0)], [launch_record(12.0, 12.0, 12.0)], RegressionSettings([TPOT]))
    assert _texts(outcome) == [
        "FAIL demo::p: regression: tpot_ms 10 -> 12 (+20.0% worse; limit 5%; 3 vs 3 launches, "
        "Mann-Whitney p=0.05, q=0.05; ratio 1.200)"
    ]


def test_a_higher_is_better_metric_is_tested_in_its_worse_direction():
    tps = parse_thresholds("decode_tokens_per_s=5%")
    base = launch_record(100.0, 101.0, 102.0, metric="decode_tokens_per_s")
    new = launch_record(80.0, 81.0, 82.0, metric="decode_tokens_per_s")
    outcome = check([base], [new], RegressionSettings(tps))
    (test,) = outcome.tests
    assert test.p_value == pytest.approx(0.05) and test.higher_is_better
    assert [f.kind for f in outcome.findings] == ["regression"]
    better = check([new], [base], RegressionSettings(tps))
    assert better.findings == [] and better.tests[0].p_value == pytest.approx(1.0)


def test_too_few_launches_to_show_a_change_is_a_note_with_the_power_needed():
    outcome = check([launch_record(10.0, 10.1)], [launch_record(12.0, 12.1)], RegressionSettings([TPOT]))
    assert outcome.findings == [] and outcome.beyond_limit == [("demo", "p")]
    assert outcome.notes == [
        "demo::p: tpot_ms +19.9% worse (limit 5%) but too few launches to show it (2 vs 2 launches reach "
        "p >= 0.17; a lone regression among 1 tests needs p <= 0.05); rerun it with more launches "
        "(measurement.launches) or `harness gate --confirm K`",
        _LAUNCH_NOTE,
        "power: with 2 vs 2 launches the smallest attainable p is 0.17, and 1 test(s) at FDR 0.05 need "
        "p <= 0.05 for a lone regression (3 launches a side would do), so only regressions shared by several "
        "points can show",
    ]


def test_a_change_short_of_significance_is_launch_noise_even_at_the_lone_p():
    outcome = check(
        [launch_record(10.0, 11.0, 12.0, 13.0, 14.0)],
        [launch_record(11.0, 12.0, 13.0, 14.0, 15.0)],
        RegressionSettings([TPOT]),
    )
    assert outcome.findings == [] and outcome.tests[0].verdict == "unknown"
    assert outcome.notes == [
        "demo::p: tpot_ms +8.3% worse (limit 5%) but not significant over 5 vs 5 launches (p=0.22, q=0.22 > "
        "0.05): within launch-to-launch noise",
        _LAUNCH_NOTE,
    ]
    # 3 vs 3 launches reach p = 0.05, exactly the lone p: significance was reachable, so it is noise too
    at_lone = check([launch_record(10.0, 12.0, 14.0)], [launch_record(11.0, 13.0, 15.0)], RegressionSettings([TPOT]))
    assert at_lone.notes[0].startswith("demo::p: tpot_ms +8.3% worse (limit 5%) but not significant over 3 vs 3")
    assert at_lone.notes[1:] == [_LAUNCH_NOTE]


def test_the_power_note_follows_the_weakest_test_and_the_fdr_given():
    base = [launch_record(10.0, 10.0, 10.0, 10.0, 10.0, 10.0, point_id="a"), launch_record(10.0, 10.1, point_id="b")]
    new = [launch_record(10.0, 10.0, 10.0, 10.0, 10.0, 10.0, point_id="a"), launch_record(10.0, 10.1, point_id="b")]
    outcome = check(base, new, RegressionSettings([TPOT], fdr=0.1))
    assert outcome.fdr == 0.1 and [t.point_id for t in outcome.tests] == ["a", "b"]
    assert outcome.notes == [
        "launch-level test of 2 metric(s): one-sided Mann-Whitney U, Benjamini-Hochberg FDR 0.1",
        "power: with 2 vs 2 launches the smallest attainable p is 0.17, and 2 test(s) at FDR 0.1 need p <= 0.05 "
        "for a lone regression (3 launches a side would do), so only regressions shared by several points can show",
    ]
    strong = [launch_record(*[10.0] * 6, point_id="a"), launch_record(*[10.0] * 6, point_id="b")]
    assert check(strong, strong, RegressionSettings([TPOT])).notes == [
        "launch-level test of 2 metric(s): one-sided Mann-Whitney U, Benjamini-Hochberg FDR 0.05"
    ]


def test_only_tests_past_their_limit_are_worded_whatever_their_order():
    base = [launch_record(10.0, 10.1, 10.2, point_id="a"), launch_record(10.0, 10.1, 10.2, point_id="b")]
    new = [launch_record(10.0, 10.1, 10.2, point_id="a"), launch_record(12.0, 12.1, 12.2, point_id="b")]
    outcome = check(base, new, RegressionSettings([TPOT], fdr=0.1))
    assert [f.point_id for f in outcome.findings] == ["b"] and outcome.beyond_limit == [("demo", "b")]
    assert outcome.tests[1].q_value == pytest.approx(0.1)  # BH: p 0.05 ranked first of two
    assert "Mann-Whitney p=0.05, q=0.1;" in outcome.findings[0].message


def test_unequal_launch_counts_are_named_baseline_first():
    too_few = check([launch_record(10.0, 10.1)], [launch_record(12.0, 12.1, 12.2)], RegressionSettings([TPOT])).notes
    assert too_few[0].startswith("demo::p: tpot_ms +20.4% worse (limit 5%) but too few launches to show it (2 vs 3 ")
    assert "(2 vs 3 launches reach p >= 0.1; a lone regression among 1 tests needs p <= 0.05)" in too_few[0]
    assert too_few[2].startswith("power: with 2 vs 3 launches the smallest attainable p is 0.1, and 1 test(s)")
    found = check(
        [launch_record(10.0, 10.1, 10.2)], [launch_record(12.0, 12.1, 12.2, 12.3)], RegressionSettings([TPOT])
    )
    assert _texts(found) == [
        "FAIL demo::p: regression: tpot_ms 10.1 -> 12.15 (+20.3% worse; limit 5%; 3 vs 4 launches, "
        "Mann-Whitney p=0.029, q=0.029; ratio 1.203 [95% CI 1.181, 1.225])"
    ]
    noise = check(
        [launch_record(10.0, 11.0, 12.0, 13.0)],
        [launch_record(11.0, 12.0, 13.0, 14.0, 15.0)],
        RegressionSettings([TPOT]),
    ).notes
    assert noise[0] == (
        "demo::p: tpot_ms +13.0% worse (limit 5%) but not significant over 4 vs 5 launches (p=0.13, q=0.13 > "
        "0.05): within launch-to-launch noise"
    )
