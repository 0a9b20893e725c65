"""Launch statistics (harness.measure.launch_stats) and the statistical regression check built on them (issue #19)."""

from __future__ import annotations

import math
import random
import re
import statistics

import pytest

from benchmarks.false_alarms import simulate
from harness.measure import drift, rounds
from harness.measure.launch_stats import combine, interval, launch, rel_half_width
from harness.records.record import Failure, Record
from harness.records.samples import TimeSplit
from harness.regression.check import check
from harness.regression.confirm import confirm
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from tests.records import launch_record, lognormal, record

TPOT = parse_thresholds("tpot=5%")
DEFAULT = parse_thresholds("tpot=5%,ttft=10%,energy_per_token=10%")


def single(point_id="p", tpot_ms=50.0, seed=0, status="ok", energy=None, **kwargs) -> Record:
    """One launch's record as steps.execute makes it: real rounds, and its launch entry from launch."""
    made = record(point_id, tpot_ms=tpot_ms, seed=seed, status=status, energy_per_token_mj=energy, **kwargs)
    if status == "ok":
        made.samples.launches = [launch(made.metrics, made.samples.rounds, started_at="t0", wall_s=1.5)]
        made.time_split = TimeSplit(load_s=2.0, timed_s=1.0)
    else:
        made.failure = Failure(traceback=f"Traceback: {status}")
    return made


def launched(point_id, tpots, seed=0, **kwargs) -> Record:
    return combine([single(point_id, tpot, seed=seed + i, **kwargs) for i, tpot in enumerate(tpots)])


# launch and drift


def throttling_rounds(slowdown_per_round: float, n=12, seed=0):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        gap = 0.02 * (1 + slowdown_per_round * i) * (1 + rng.uniform(-0.005, 0.005))
        out.append(rounds.Round(0, 16, 1, 0.1, (gap,) * 15, 0.1 + 15 * gap))
    return out


def test_a_launch_holds_its_medians_round_count_and_provenance():
    made = single(seed=3, energy=4.5)
    entry = made.samples.launches[0]
    assert entry.medians == {
        "ttft_ms": made.metrics["ttft_ms"],
        "tpot_ms": made.metrics["tpot_ms"],
        "decode_tokens_per_s": made.metrics["decode_tokens_per_s"],
        "energy_per_token_mj": 4.5,
    }
    assert (entry.index, entry.status, entry.rounds, entry.started_at, entry.wall_s) == (0, "ok", 5, "t0", 1.5)
    assert entry.drift and not entry.drift[0].flagged  # five rounds of jitter: measured, no trend


def test_drift_flags_a_throttling_trend_and_not_a_flat_launch():
    throttled = drift.drift(throttling_rounds(0.01))  # 1 % slower every round, 11 % over the launch
    assert throttled[0].flagged and throttled[0].slope_per_round == pytest.approx(0.01, rel=0.2)
    assert throttled[0].p_value < 0.05 and "rose 1" in throttled[0].why and "12 rounds" in throttled[0].why
    flat = drift.drift(throttling_rounds(0.0))
    assert not flat[0].flagged and flat[0].why is None and abs(flat[0].slope_per_round) < 0.002
    gentle = drift.drift(throttling_rounds(0.002, n=12))  # significant but 2 % in all: not worth a flag
    assert gentle[0].p_value < 0.05 and not gentle[0].flagged
    short = drift.drift(throttling_rounds(0.05, n=4))  # Kendall's exact p is >= 0.083 at 4 rounds: cannot fire
    assert not short[0].checked and not short[0].flagged and "needs 5" in short[0].why
    assert drift.DRIFT_MIN_ROUNDS == 5 and drift.drift(throttling_rounds(0.05, n=5))[0].flagged  # 5 rounds can
    assert launch({"tpot_ms": 20.0}, throttling_rounds(0.01)).drift[0].flagged


# interval


def test_interval_methods_follow_the_launch_count():
    one = interval([10.0], samples=5)
    assert (one.method, one.estimate, one.low, one.high, one.launches) == ("single launch", 10.0, None, None, 1)
    few = interval([10.0, 11.0, 12.0], samples=15)
    logs = [math.log(v) for v in (10.0, 11.0, 12.0)]
    centre, half = statistics.fmean(logs), 4.302653 * statistics.stdev(logs) / math.sqrt(3)  # t(0.975, df=2)
    assert few.method == "log-t" and few.estimate == 11.0 and few.samples == 15
    assert few.low == pytest.approx(math.exp(centre - half), rel=1e-5)
    assert few.high == pytest.approx(math.exp(centre + half), rel=1e-5)
    assert few.cv == pytest.approx(1.0 / 11.0)
    signed = interval([-1.0, 0.5, 2.0], samples=15)  # not a positive quantity: Student's t of the values
    assert signed.method == "t" and signed.low < -1.0 < 2.0 < signed.high
    values = [10.0, 10.4, 9.7, 10.1, 12.0, 9.9, 10.2]
    many = interval(values, samples=35)
    assert many.method == "bootstrap" and many.estimate == 10.1 and many.launches == 7
    assert 9.7 <= many.low <= 10.1 <= many.high <= 12.0
    assert interval(values, samples=35) == many  # seeded: reproducible
    assert interval([5.0] * 6, samples=30).low == interval([5.0] * 6, samples=30).high == 5.0
    with pytest.raises(ValueError, match="at least one launch value"):
        interval([None], samples=0)


def test_relative_half_width_needs_an_interval():
    merged = launched("p", [50.0, 51.0, 49.0, 50.5, 49.5])
    found = merged.samples.intervals["tpot_ms"]
    assert rel_half_width(merged) == pytest.approx((found.high - found.low) / 2 / found.estimate)
    assert 0 < rel_half_width(merged) < 0.03
    assert rel_half_width(combine([single()])) is None
    assert rel_half_width(merged, "energy_per_token_mj") is None


# combine


def test_combine_merges_launches_rounds_and_metrics():
    parts = [single("p", tpot, seed=i) for i, tpot in enumerate([50.0, 60.0, 55.0])]
    merged = combine(parts)
    assert merged.status == "ok" and merged.reason is None
    assert [e.index for e in merged.samples.launches] == [0, 1, 2]
    assert [r.launch for r in merged.samples.rounds] == [0] * 5 + [1] * 5 + [2] * 5
    assert merged.samples.rounds[5] == parts[1].samples.rounds[0].model_copy(update={"launch": 1})
    assert merged.metrics["tpot_ms"] == statistics.median(p.metrics["tpot_ms"] for p in parts)
    assert merged.metrics["ms_per_token_p99"] == statistics.median(p.metrics["ms_per_token_p99"] for p in parts)
    assert merged.metrics["energy_per_token_mj"] is None
    assert set(merged.samples.intervals) == {"ttft_ms", "tpot_ms", "decode_tokens_per_s"}
    assert merged.samples.intervals["tpot_ms"].method == "log-t" and merged.samples.intervals["tpot_ms"].samples == 15
    assert merged.time_split == TimeSplit(load_s=6.0, timed_s=3.0)
    assert merged.correctness == parts[0].correctness and merged.outputs == parts[0].outputs
    again = combine([merged, single("p", 52.0, seed=9)])  # a relaunch appends to a merged record
    assert [e.index for e in again.samples.launches] == [0, 1, 2, 3] and again.samples.rounds[-1].launch == 3
    assert Record.from_dict(again.to_dict()) == again


def test_combine_keeps_each_warm_ups_length_beside_its_time_or_says_none_when_a_launch_lacks_it():
    new = [single("p", 50.0, seed=i) for i in range(2)]
    for made, lengths in zip(new, ([32], [2])):
        made.samples.warmup_s, made.samples.warmup_tokens = [0.5] * len(lengths), lengths
    assert combine(new).samples.warmup_tokens == [32, 2]
    older = single("p", 50.0, seed=3)  # a launch recorded before warm-up lengths were
    older.samples.warmup_s = [0.5]
    merged = combine([*new, older])
    assert merged.samples.warmup_s == [0.5, 0.5, 0.5] and merged.samples.warmup_tokens == []  # not misaligned


def test_a_failed_launch_fails_the_point_but_keeps_the_ok_launches():
    parts = [single("p", 50.0, seed=1), single("p", status="failed"), single("p", 52.0, seed=2)]
    parts[0].unavailable = {"energy_j": "no meter"}
    merged = combine(parts)
    assert merged.status == "failed" and merged.reason == "launch 2 of 3: it failed"
    assert merged.failure.traceback == "Traceback: failed"
    assert [e.status for e in merged.samples.launches] == ["ok", "failed", "ok"]
    assert [r.launch for r in merged.samples.rounds] == [0] * 5 + [2] * 5
    assert merged.metrics["tpot_ms"] == statistics.median([parts[0].metrics["tpot_ms"], parts[2].metrics["tpot_ms"]])
    assert merged.samples.intervals["tpot_ms"].launches == 2 and merged.unavailable == {"energy_j": "no meter"}
    timeout = combine([single("p", status="timeout"), single("p", 50.0)])
    assert timeout.status == "timeout" and timeout.reason.startswith("launch 1 of 2: it timeout")
    assert timeout.correctness is not None  # taken from the launch that ran


def test_a_figure_the_launch_entries_lack_keeps_the_records_median():
    # the energy step runs after the launch entry is made: its figure must not be lost in the merge
    parts = [single("p", 50.0, seed=i, energy=e) for i, e in enumerate([4.0, 6.0, 5.0])]
    for part in parts:
        del part.samples.launches[0].medians["energy_per_token_mj"]
    merged = combine(parts)
    assert merged.metrics["energy_per_token_mj"] == 5.0 and "energy_per_token_mj" not in merged.samples.intervals


def test_combine_of_one_record_fills_its_intervals_and_skipped_stays_skipped():
    one = single("p", 50.0, seed=4)
    merged = combine([one])
    assert merged.metrics == one.metrics and merged.samples.rounds == one.samples.rounds
    assert merged.samples.intervals["tpot_ms"].method == "single launch"
    failed = combine([single("p", status="failed")])
    assert (failed.status, failed.reason) == ("failed", "it failed")
    skipped = single("p", status="skipped")
    assert combine([skipped, skipped]) is skipped
    with pytest.raises(ValueError, match="records of demo::p expected, got demo::q"):
        combine([single("p"), single("q")])


# the statistical regression check


def test_a_clear_regression_over_launches_fails_with_its_statistics():
    rng = random.Random(1)
    base = [launched("p", lognormal(rng, 50.0, 0.03, 5), seed=0)]
    slow = [launched("p", lognormal(rng, 60.0, 0.03, 5), seed=10)]
    outcome = check(base, slow, RegressionSettings(DEFAULT))
    assert [(f.point_id, f.kind, f.metric) for f in outcome.findings] == [("p", "regression", "tpot_ms")]
    test = outcome.findings[0].test
    assert test.launches == (5, 5) and test.p_value == pytest.approx(1 / 252) and test.q_value <= 0.05
    assert test.ratio_low < test.ratio < test.ratio_high and 1.1 < test.ratio < 1.3
    assert "5 vs 5 launches, Mann-Whitney p=0.004, q=" in outcome.findings[0].message
    assert not outcome.single_launch and any("launch-level test of 2 metric(s)" in n for n in outcome.notes)


def test_higher_is_better_and_energy_metrics_are_tested_over_launches():
    base = [launched("p", [50.0, 50.5, 49.5, 50.2, 49.8], energy=5.0)]
    new = [launched("p", [60.0, 60.5, 59.5, 60.2, 59.8], energy=6.0)]
    outcome = check(base, new, RegressionSettings(parse_thresholds("decode_tokens_per_s=5%,energy_per_token=10%")))
    assert sorted(f.metric for f in outcome.findings) == ["decode_tokens_per_s", "energy_per_token_mj"]
    faster = check(new, base, RegressionSettings(parse_thresholds("decode_tokens_per_s=5%")))
    assert faster.passed


def test_pure_noise_stays_green_at_the_stated_false_discovery_rate():
    """12 seeded nights of 10 points x 2 metrics, launch-to-launch CV 8 %, 5 launches a side, no change at
    all: the fast version of ``benchmarks/false_alarms.py`` (200 nights, its figures in docs/statistics.md).
    At most 2 of the 12 nights may be red; without the Benjamini-Hochberg correction 7 are."""
    found = simulate(nights=12, seed=19)
    assert found.holds and found.floorless <= 2 and found.default <= found.floorless
    assert found.uncorrected / found.nights > 0.3  # without the correction most nights would be red: it can fail


def test_the_threshold_is_a_floor_for_significant_changes():
    base = [launched("p", [50.0, 50.1, 49.9, 50.05, 49.95, 50.02], jitter=0.001)]
    new = [launched("p", [51.5, 51.6, 51.4, 51.55, 51.45, 51.52], jitter=0.001)]  # +3 %, every launch slower
    outcome = check(base, new, RegressionSettings(TPOT))
    assert outcome.passed and outcome.tests[0].q_value <= 0.05
    tight = check(base, new, RegressionSettings(parse_thresholds("tpot=2%")))
    assert [f.metric for f in tight.findings] == ["tpot_ms"]


def test_one_launch_a_side_keeps_the_spread_rule_and_says_so():
    outcome = check([single("p", 50.0, seed=1)], [single("p", 60.0, seed=1)], RegressionSettings(TPOT))
    assert [f.kind for f in outcome.findings] == ["regression"] and outcome.findings[0].test is None
    assert "measured spread" in outcome.findings[0].message
    assert outcome.single_launch == [("demo", "p")]
    assert any(
        "1 point(s) judged without launch statistics" in n and "measurement.launches" in n for n in outcome.notes
    )
    mixed = check([single("p", 50.0, seed=1)], [launched("p", [60.0, 61.0, 59.0])], RegressionSettings(TPOT))
    assert mixed.single_launch == [("demo", "p")] and not mixed.tests


def test_a_change_too_few_launches_cannot_show_is_noted_not_passed_silently():
    # 3 vs 3 launches reach p = 1/20 = 0.05 at best; with TPOT and TTFT tested a lone regression needs 0.025
    outcome = check(
        [launched("p", [50.0, 50.5, 49.5])], [launched("p", [60.0, 60.5, 59.5])], RegressionSettings(DEFAULT)
    )
    assert outcome.passed and outcome.flagged == [("demo", "p")]
    note = next(n for n in outcome.notes if "too few launches" in n)
    assert "tpot_ms +19.9% worse (limit 5%)" in note and "3 vs 3 launches reach p >= 0.05" in note
    assert "among 2 tests needs p <= 0.025" in note and "--confirm K" in note
    power = (
        "power: with 3 vs 3 launches the smallest attainable p is 0.05, and 2 test(s) at FDR 0.05 need "
        "p <= 0.025 for a lone regression (4 launches a side would do)"
    )
    assert any(n.startswith(power) for n in outcome.notes)
    assert check(
        [launched("p", [50.0, 50.5, 49.5])], [launched("p", [60.0, 60.5, 59.5])], RegressionSettings(TPOT)
    ).findings


def test_many_tests_raise_the_bar_and_the_power_note_says_by_how_much():
    points = [f"p{i}" for i in range(13)]
    base = [launch_record(50.0, 50.5, 49.5, 50.2, 49.8, point_id=p, also={"ttft_ms": [200.0] * 5}) for p in points]
    new = [launch_record(50.0, 50.5, 49.5, 50.2, 49.8, point_id=p, also={"ttft_ms": [200.0] * 5}) for p in points[:-1]]
    new.append(launch_record(60.0, 60.5, 59.5, 60.2, 59.8, point_id=points[-1], also={"ttft_ms": [200.0] * 5}))
    outcome = check(base, new, RegressionSettings(TPOT))
    assert outcome.passed  # p = 1/252 > 0.05 / 13: a lone regression among 13 tests cannot show
    assert any(
        n.startswith("power: with 5 vs 5 launches the smallest attainable p is 0.004, and 13 test(s)")
        and "6 launches a side would do" in n
        for n in outcome.notes
    )
    assert check(
        base[:12], new[:11] + [new[-1].model_copy(update={"point_id": "p11"})], RegressionSettings(TPOT)
    ).findings


def rerun_from(tpot_by_point, seed=100):
    """A real rerun: k more launches of each point, appended to its record as Runner.relaunch does."""

    def rerun(records, launches):
        return [
            combine([r, *(single(r.point_id, tpot_by_point[r.point_id], seed=seed + i) for i in range(launches))])
            for r in records
        ]

    return rerun


def test_confirm_reruns_flagged_points_and_judges_the_new_launches_alone():
    base = [launched("a", [50.0, 50.5, 49.5, 50.2, 49.8]), launched("b", [50.0, 50.5, 49.5, 50.2, 49.8], seed=5)]
    new = [
        launched("a", [60.0, 60.5, 59.5, 60.2, 59.8], seed=20),
        launched("b", [60.0, 60.5, 59.5, 60.2, 59.8], seed=30),
    ]
    first = check(base, new, RegressionSettings(TPOT))
    assert [f.point_id for f in first.findings] == ["a", "b"]
    seen = []

    def rerun(records, launches):
        seen.append(([r.point_id for r in records], launches))
        return rerun_from({"a": 60.0, "b": 50.0})(records, launches)  # b was a fluke: back to 50 ms

    final = confirm(first, base, new, RegressionSettings(TPOT), rerun, 5)
    assert seen == [(["a", "b"], 5)]
    assert [f.point_id for f in final.findings] == ["a"] and final.findings[0].test.launches == (5, 5)
    assert any("reran demo::a (still regressed), demo::b (cleared)" in n for n in final.notes)
    untouched = confirm(check(base, base, RegressionSettings(TPOT)), base, base, RegressionSettings(TPOT), rerun, 5)
    assert untouched.passed and seen == [(["a", "b"], 5)]  # nothing flagged, nothing rerun


def test_confirm_turns_an_underpowered_change_into_a_verdict():
    base = [launched("p", [50.0, 50.5, 49.5, 50.2, 49.8])]
    new = [launched("p", [60.0, 60.5], seed=20)]  # 5 vs 2 launches: p >= 1/21, above the 0.025 needed
    first = check(base, new, RegressionSettings(DEFAULT))
    assert first.passed and first.flagged == [("demo", "p")]
    final = confirm(first, base, new, RegressionSettings(DEFAULT), rerun_from({"p": 60.0}), 5)
    assert [f.kind for f in final.findings] == ["regression"]

    def crashed(records, launches):
        return [combine([records[0], single("p", status="failed")])]

    failing = confirm(first, base, new, RegressionSettings(DEFAULT), crashed, 1)
    assert [(f.kind, f.message) for f in failing.findings] == [("failed", "failed: it failed")]


def test_three_spread_launches_of_a_time_never_read_below_zero():
    """Three launches at 1, 2 and 40 ms/token: a plain t interval ran from about -49 to +78 ms and the run
    table read ``14.3 ± 63.7``; the log-t interval stays positive and the table shows its two ends."""
    from harness.cli.output import run_table_lines
    from harness.report.summary import summarize

    found = interval([1.0, 2.0, 40.0], samples=15)
    assert found.method == "log-t" and 0 < found.low < 1.0 and found.high > 40.0
    merged = launched("p", [1.0, 2.0, 40.0])
    row = next(line for line in run_table_lines([merged]) if line.startswith("demo::p"))
    assert " ± " not in row.split("ok", 1)[1].split()[0:3] and "[" in row, row
    low = float(row.split("[")[1].split(",")[0])
    assert low > 0, row
    found_in_summary = re.search(r"\d \[(\S+), (\S+)\] ms/token \(95 % CI, 3 launches\)", summarize([merged]))
    assert found_in_summary and float(found_in_summary.group(1)) > 0
