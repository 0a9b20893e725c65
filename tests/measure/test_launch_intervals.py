"""Launch statistics at their edges, on hand-built values: the rounds the trend test needs, the interval's
method by launch count and its exact endpoints, the drift flag's two conditions. Each assertion is here
because a mutant of the code survived without it (``python benchmarks/mutation.py``, docs/benchmarks.md)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from harness.measure import drift, launch_stats
from harness.records.record import Record
from harness.records.samples import Interval, Launch, Samples


def test_the_trend_test_needs_five_rounds_at_p_005():
    assert drift._fewest_rounds(0.05) == 5 and drift.DRIFT_MIN_ROUNDS == 5
    assert drift._fewest_rounds(2 / 24) == 4  # 4 rounds reach 2 / 4! exactly
    assert drift._fewest_rounds(1.0) == 2


def test_one_launch_has_no_interval_and_unusable_values_are_dropped():
    assert launch_stats.interval([5.0, None, math.nan, math.inf], samples=3) == Interval(
        estimate=5.0, launches=1, samples=3, method="single launch"
    )
    with pytest.raises(ValueError, match=r"^interval: expected at least one launch value, got none$"):
        launch_stats.interval([None, math.nan], samples=0)


def test_two_to_four_launches_get_students_t_and_five_the_bootstrap():
    t = launch_stats.interval([-1.0, 0.0, 1.0], samples=9)  # not all positive: Student's t of the values
    assert (t.estimate, t.method, t.launches, t.samples) == (0.0, "t", 3, 9)
    assert (t.low, t.high) == pytest.approx((-2.48413771175033, 2.48413771175033), rel=1e-12)
    t = launch_stats.interval([1.0, 2.0, 3.0], samples=9)  # a positive quantity: t of the logs, back-transformed
    assert (t.estimate, t.method, t.launches, t.samples) == (2.0, "log-t", 3, 9)
    assert 0 < t.low < 1.0 and t.high > 3.0  # the plain t interval was -0.48 .. 4.48
    assert t.cv == pytest.approx(0.5)  # sample stdev 1 over mean 2
    boot = launch_stats.interval([1.0, 2.0, 3.0, 4.0, 10.0], samples=9)
    assert (boot.estimate, boot.low, boot.high, boot.method) == (3.0, 1.0, 10.0, "bootstrap")
    assert boot.cv == pytest.approx(0.8838834764831845, rel=1e-12)
    assert launch_stats.interval([1.0, 2.0, 3.0, 10.0], samples=4).method == "log-t"


def test_launches_without_spread_have_a_point_interval_and_a_zero_mean_no_cv():
    flat = launch_stats.interval([2.0, 2.0, 2.0, 2.0, 2.0], samples=4)
    assert (flat.low, flat.high, flat.cv, flat.method) == (2.0, 2.0, 0.0, "bootstrap")
    centred = launch_stats.interval([-1.0, 1.0], samples=4)
    assert centred.cv is None and centred.high == pytest.approx(12.706204736174694, rel=1e-12)


def _rounds(*tpot_ms: float):
    return [SimpleNamespace(gaps_s=(ms / 1e3, ms / 1e3)) for ms in tpot_ms]


def test_too_few_rounds_with_tokens_say_the_trend_was_not_checked():
    (entry,) = drift.drift(_rounds(10, 11, 12, 13) + [SimpleNamespace(gaps_s=())])
    assert not entry.checked and not entry.flagged and entry.p_value is None and entry.metric == "tpot_ms"
    assert entry.why == (
        "not checked: 4 timed round(s) with tokens; the trend test needs 5 to be able to reach p < 0.05 "
        "(measurement.min_rounds: 5)"
    )


def test_a_steady_rise_or_fall_is_flagged_with_its_slope_and_p():
    (rise,) = drift.drift(_rounds(10, 11, 12, 13, 14))
    assert rise.checked and rise.flagged and rise.metric == "tpot_ms"
    assert rise.why == (
        "tpot_ms rose 33% over 5 rounds (Theil-Sen +8.33% a round, Kendall p=0.017): the machine changed during "
        "the launch (throttling, a busy neighbour); see the launch's machine state"
    )
    assert rise.slope_per_round == pytest.approx(1 / 12) and rise.p_value == pytest.approx(1 / 60)
    assert rise.why.startswith("tpot_ms rose 33% over 5 rounds (Theil-Sen +8.33% a round, Kendall p=0.017)")
    (fall,) = drift.drift(_rounds(14, 13, 12, 11, 10))
    assert fall.flagged and fall.why.startswith("tpot_ms fell 33% over 5 rounds (Theil-Sen -8.33% a round")


def test_a_significant_but_small_trend_and_constant_rounds_are_not_flagged():
    (small,) = drift.drift(_rounds(10, 10.01, 10.02, 10.03, 10.04))
    assert small.p_value == pytest.approx(1 / 60) and not small.flagged and small.why is None
    assert small.slope_per_round == pytest.approx(0.01 / 10.02)  # relative to the median round
    (flat,) = drift.drift(_rounds(10, 10, 10, 10, 10))
    assert (flat.checked, flat.p_value, flat.slope_per_round, flat.flagged) == (True, None, 0.0, False)
    (edge,) = drift.drift(_rounds(78, 79, 80, 81, 82))  # moves exactly DRIFT_TOTAL over the launch: not more
    assert edge.slope_per_round * 4 == drift.DRIFT_TOTAL and edge.p_value < drift.DRIFT_P and not edge.flagged
    (idle,) = drift.drift(_rounds(0, 0, 0, 0, 0))  # no time between tokens: no level to be relative to
    assert (idle.slope_per_round, idle.p_value, idle.flagged) == (0.0, None, False)
    (fast,) = drift.drift(_rounds(0.5, 0.6, 0.7, 0.8, 0.9))  # under a millisecond a token is a level too
    assert fast.flagged and fast.slope_per_round == pytest.approx(0.1 / 0.7)
    (noisy,) = drift.drift(_rounds(10, 10.1, 10, 10.1, 10.2))
    assert noisy.p_value == pytest.approx(0.11718508719813801, rel=1e-9) and not noisy.flagged


def test_intervals_use_the_ok_launches_that_measured_each_figure():
    launches = [
        Launch(index=0, medians={"tpot_ms": 10.0, "ttft_ms": 100.0}, rounds=5),
        Launch(index=1, medians={"tpot_ms": 12.0}, rounds=4),
        Launch(index=2, status="failed", medians={"tpot_ms": 99.0, "ttft_ms": 999.0}, rounds=3),
    ]
    found = launch_stats.intervals(launches)
    assert set(found) == {"tpot_ms", "ttft_ms"}
    assert (found["tpot_ms"].estimate, found["tpot_ms"].launches, found["tpot_ms"].samples) == (11.0, 2, 9)
    assert (found["ttft_ms"].estimate, found["ttft_ms"].samples, found["ttft_ms"].method) == (100.0, 5, "single launch")
    assert launch_stats.intervals([]) == {}


def _record(metrics: dict, intervals: dict | None = None) -> Record:
    return Record(
        scenario="demo",
        point_id="p",
        point={},
        status="ok",
        metrics=metrics,
        samples=Samples(intervals=intervals or {}),
    )


def test_figures_are_medians_over_records_and_launch_figures_over_ok_launches():
    records = [_record({"tpot_ms": 10.0, "gate_s": 1.0, "other": None}), _record({"tpot_ms": 30.0, "gate_s": 3.0})]
    launches = [
        Launch(index=0, medians={"tpot_ms": 11.0}, rounds=5),
        Launch(index=1, medians={"tpot_ms": 13.0}, rounds=5),
        Launch(index=2, status="timeout", medians={"tpot_ms": 99.0}, rounds=5),
    ]
    assert launch_stats._metrics(records, launches) == {"tpot_ms": 12.0, "gate_s": 2.0, "other": None}
    assert launch_stats._metrics(records, []) == {"tpot_ms": 20.0, "gate_s": 2.0, "other": None}


def test_the_relative_half_width_of_an_interval():
    record = _record({}, {"tpot_ms": Interval(estimate=-20.0, low=-21.0, high=-18.0, launches=3)})
    assert launch_stats.rel_half_width(record) == pytest.approx(0.075)
    assert launch_stats.rel_half_width(record, "ttft_ms") is None
    single = _record({}, {"tpot_ms": Interval(estimate=20.0, launches=1)})
    assert launch_stats.rel_half_width(single) is None
    assert launch_stats.rel_half_width(_record({}, {"tpot_ms": Interval(estimate=0.0, low=-1.0, high=1.0)})) is None
    assert launch_stats.rel_half_width(_record({}, {"tpot_ms": Interval(estimate=20.0, low=19.0)})) is None
    assert launch_stats.rel_half_width(_record({}, {"tpot_ms": Interval(estimate=20.0, high=21.0)})) is None
