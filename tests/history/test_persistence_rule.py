"""``history check``'s persistence rule at its edges (harness.history.series_check with changepoints.held and
recent_step), on hand-built series: a lone bad newest night is suspicious, one that held is a regression.
Each assertion is here because a mutant survived without it (``python benchmarks/mutation.py history``,
docs/benchmarks.md)."""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.history import series_check as history_check
from harness.history.changepoints import ChangePoint, held
from harness.history.ingest import FingerprintKey
from harness.history.queries import RunInfo, SeriesData

T0 = datetime(2026, 1, 1)


def _series(values, metric="tpot_ms") -> SeriesData:
    runs = [RunInfo(100 + i, i, T0 + timedelta(days=i), f"c{i:02d}", "host", "nightly", 1) for i in range(len(values))]
    key = FingerprintKey("host", "cpu", None, "hf", "5.0")
    return SeriesData(1, "demo", "p", metric, key, runs=runs, values=[float(v) for v in values])


def test_held_counts_the_longest_run_of_nights_past_the_midpoint_in_the_changes_direction():
    up = ChangePoint(4, 4, 4, before=10.0, after=11.0)
    assert held([10, 10, 10, 10, 11, 11, 11, 11], up, False) == 4
    assert held([10, 10, 10, 10, 11, 10, 11, 11], up, False) == 2
    assert held([10, 10, 10, 10, 10.5, 10.5], up, False) == 0  # on the midpoint: not past it


def test_a_lone_bad_newest_night_is_suspicious_and_a_regression_once_the_next_one_confirms_it():
    lone = _series([10] * 8 + [11])
    result = history_check.check([lone], lone.runs)
    assert result.regressions == [] and result.open == []
    (suspicious,) = result.suspicious
    assert (suspicious.first_after.id, suspicious.nights) == (108, 1)
    confirmed = _series([10] * 8 + [11, 11])
    (regression,) = history_check.check([confirmed], confirmed.runs).regressions
    assert (regression.first_after.id, regression.nights) == (108, 2)


def test_persist_sets_how_many_nights_make_a_regression():
    lone = _series([10] * 8 + [11])
    (regression,) = history_check.check([lone], lone.runs, persist=1).regressions
    assert regression.first_after.id == 108 and history_check.check([lone], lone.runs, persist=1).suspicious == []
    two = _series([10] * 8 + [11, 11])
    strict = history_check.check([two], two.runs, persist=3)
    assert strict.regressions == [] and strict.open == [] and [f.nights for f in strict.suspicious] == [2]
    assert history_check.DEFAULT_PERSIST == 2


def test_a_bad_newest_night_paired_with_an_ordinary_one_is_placed_at_its_own_night():
    series = _series([10] * 18 + [10, 14])
    (paired,) = history_check.findings([series])  # the segmentation's split: the ordinary night with the bad one
    assert (paired.change.index, paired.change.after, paired.nights) == (18, 12.0, 1)
    (step,) = history_check.findings([series], recent=True)
    assert (step.change, step.current, step.nights) == (ChangePoint(19, 19, 19, 10.0, 14.0), 14.0, 1)
    assert (step.last_before.id, step.first_after.id, step.range_before.id, step.range_after.id) == (118, 119, 118, 119)
    result = history_check.check([series], series.runs)
    assert result.regressions == [] and [f.first_after.id for f in result.suspicious] == [119]


def test_a_new_step_after_a_held_one_is_suspicious_beside_the_regression():
    series = _series([10] * 8 + [12, 12, 14])
    result = history_check.check([series], series.runs)
    assert [(f.first_after.id, f.nights) for f in result.regressions] == [(108, 3)]
    assert [(f.first_after.id, f.nights, f.change.before, f.change.after) for f in result.suspicious] == [
        (110, 1, 12.0, 14.0)
    ]
    better = _series([10] * 8 + [9])  # a lone better night: neither
    assert history_check.check([better], better.runs) == history_check.CheckResult([], [], 1, 9, [])


def _suspicious(values, metric="tpot_ms", **options):
    series = _series(values, metric)
    result = history_check.check([series], series.runs, **options)
    assert result.regressions == []
    return [(f.change, f.nights) for f in result.suspicious]


def test_a_change_three_nights_back_is_kept_and_the_newest_night_judged_after_it():
    values = [16, 16, 16, 16, 15.9, 15.9, 16, 16, 13.9, 14, 15.9]
    assert _suspicious(values) == [(ChangePoint(10, 10, 10, 13.95, 15.9), 1)]


def test_a_bad_night_paired_by_the_segmentation_is_judged_from_the_change_before_it():
    values = [10.1, 10, 10.1, 10, 10, 10.1, 9.9, 9.9, 10.1, 16, 16.1, 16, 13.9, 8]  # tokens/s: lower is worse
    assert _suspicious(values, "decode_tokens_per_s") == [(ChangePoint(13, 13, 13, 16.0, 8.0), 1)]


def test_an_older_change_that_held_one_night_stays_beside_the_newest_step():
    values = [12, 12, 12, 12, 12.1, 12, 12.1, 12, 12, 11.9, 12, 10, 12, 8]
    assert _suspicious(values, "decode_tokens_per_s") == [
        (ChangePoint(11, 9, 12, 12.0, 10.0), 1),
        (ChangePoint(13, 13, 13, 11.0, 8.0), 1),
    ]


def test_the_newest_nights_step_is_judged_with_the_checks_penalty():
    values = [10, 10, 10, 9.9, 10.1, 9.9, 9.9, 10.1, 10.3]
    assert _suspicious(values) == [(ChangePoint(8, 8, 8, 10.0, 10.3), 1)]
    assert _suspicious(values, penalty=8.0) == []


def test_every_series_keeps_its_findings():
    first, second = _series([10] * 8 + [11]), _series([10] * 8 + [12], metric="ttft_ms")
    result = history_check.check([first, second], first.runs)
    assert [(f.series.metric, f.change.after) for f in result.suspicious] == [("tpot_ms", 11.0), ("ttft_ms", 12.0)]


def test_held_follows_a_falling_changes_direction_for_a_metric_without_one():
    down = ChangePoint(4, 4, 4, before=11.0, after=10.0)
    assert held([11, 11, 11, 11, 10, 10, 10], down, None) == 3
    assert held([11, 11, 11, 11, 10, 10.5, 10], down, None) == 1  # on the midpoint: not past it
    assert held([11, 11, 11, 11, 10, 10, 10], down, True) == 3  # tokens/s falling: the worse direction


def test_the_newest_night_is_judged_once_four_nights_come_before_it():
    assert _suspicious([10, 10, 10, 14]) == []
    assert _suspicious([10, 10, 10, 10, 14]) == [(ChangePoint(4, 4, 4, 10.0, 14.0), 1)]


def test_a_newest_step_is_measured_from_the_first_night_when_no_change_came_before():
    # the segmentation pairs night 3 with the bad night 4; the step is judged from nights 0-3, median 10.5
    assert _suspicious([9, 10, 11, 11, 15]) == [(ChangePoint(4, 4, 4, 10.5, 15.0), 1)]


def test_a_step_that_held_two_nights_is_one_regression_and_its_second_night_no_step_of_its_own():
    series = _series([10] * 8 + [12, 15])
    result = history_check.check([series], series.runs)
    assert [(f.change, f.nights) for f in result.regressions] == [(ChangePoint(8, 8, 8, 10.0, 13.5), 2)]
    assert result.suspicious == []


def test_a_newest_night_just_short_of_the_penalty_is_not_a_step():
    # splitting the last night off 8 others lowers the squared error by 8/9 of (its distance / noise)^2:
    # 10.27 falls short of 4 ln 9 noise variances (10.3 passes it, above)
    values = [10, 10, 10, 9.9, 10.1, 9.9, 9.9, 10.1]
    assert _suspicious([*values, 10.27]) == []
    assert _suspicious([*values, 10.3]) == [(ChangePoint(8, 8, 8, 10.0, 10.3), 1)]


def test_a_series_with_an_infinite_night_is_not_judged():
    series = _series([10] * 7 + [float("inf"), 14])
    assert history_check.check([series], series.runs) == history_check.CheckResult([], [], 1, 9, [])
