"""History change-point decisions at their edges, on hand-built series (no database): the noise scale, the
exact split and plausible range of clean steps, which findings are open and which are new. Each assertion
is here because a mutant of the code survived without it (``python benchmarks/mutation.py``)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from harness.history import series_check as history_check
from harness.history.changepoints import ChangePoint, detect, last_level, noise
from harness.history.ingest import FingerprintKey
from harness.history.queries import RunInfo, SeriesData

# --- change points --------------------------------------------------------------------------------


def test_noise_is_the_successive_difference_scale_with_a_floor():
    assert noise([1, 3, 2, 4]) == pytest.approx(1.0)  # diffs 2, -1, 2: stdev sqrt(2), over sqrt(2)
    assert noise([1.0, 3.0, 2.0]) == pytest.approx(1.5 / math.sqrt(2))  # three values: diffs 2, -1
    assert noise([5, 7]) == pytest.approx(6e-4)  # two values: the floor, 0.01 % of the level
    assert noise([5]) == pytest.approx(5e-4)
    assert noise([-200, -200, -200]) == pytest.approx(0.02)  # the level's size, whatever its sign
    assert noise([0, 0, 0]) == pytest.approx(1e-16)


def test_a_change_point_reports_relative_change_and_worsening_by_direction():
    up = ChangePoint(4, 3, 5, before=-100.0, after=-90.0)
    assert up.relative == pytest.approx(0.1)
    assert up.worsening(higher_is_better=False) == pytest.approx(0.1)
    assert up.worsening(higher_is_better=True) == pytest.approx(-0.1)
    assert ChangePoint(4, 4, 4, before=0.0, after=1.0).relative == math.inf


def test_clean_steps_are_placed_exactly_with_their_plausible_ranges():
    steps = [10, 10, 10, 10, 20, 20, 20, 20, 5, 5, 5, 5]
    assert detect(steps) == [ChangePoint(4, 3, 5, 10.0, 20.0), ChangePoint(8, 8, 8, 20.0, 5.0)]
    assert last_level(steps, detect(steps)) == 5.0 and last_level([1, 2, 3], []) == 2.0
    noisy = [10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.1, 10.0, 12.0, 12.1, 11.9, 12.0, 12.2, 11.8, 12.0, 12.1]
    assert detect(noisy) == [ChangePoint(8, 8, 8, 10.0, 12.0)]


def test_the_penalty_decides_and_a_weak_step_gets_a_wide_range():
    weak = [10.0, 10.3, 9.7, 10.0, 10.4, 9.9, 10.6, 10.5]
    assert detect(weak) == []
    assert detect(weak, penalty=0.5) == [ChangePoint(6, 2, 6, 10.0, 10.55)]


def test_too_short_or_non_finite_series_have_no_change_points():
    assert detect([1.0, 1.0, 9.0]) == []
    assert detect([1.0, 1.0, 9.0, 9.0]) == [ChangePoint(2, 2, 2, 1.0, 9.0)]  # 2 a side is enough
    assert detect([10, 10, 10, 20, 20, 20, 20]) == [ChangePoint(3, 3, 3, 10.0, 20.0)]  # any night, odd ones too
    assert detect([1.0, 1.0, 1.0, 9.0, 9.0, math.nan]) == []
    assert detect([1.0, 1.0, 1.0, 9.0, 9.0, math.inf]) == []


# --- findings and the check -----------------------------------------------------------------------

T0 = datetime(2026, 1, 1)


def _runs(n: int) -> list[RunInfo]:
    return [RunInfo(100 + i, i, T0 + timedelta(days=i), f"c{i:02d}", "host", "nightly", 1) for i in range(n)]


def _series(values, metric="tpot_ms") -> SeriesData:
    key = FingerprintKey("host", "cpu", None, "hf", "5.0")
    return SeriesData(1, "demo", "p", metric, key, runs=_runs(len(values)), values=[float(v) for v in values])


def test_a_finding_places_its_change_among_the_runs():
    series = _series([10, 10, 10, 10, 20, 20, 20, 20, 5, 5, 5, 5])
    first, second = history_check.findings([series])
    assert (first.last_before.id, first.first_after.id) == (103, 104)
    assert (first.range_before.id, first.range_after.id) == (102, 105)  # plausible 3..5
    assert (second.range_before.id, second.range_after.id) == (107, 108)
    assert first.higher_is_better is False and first.worsening == pytest.approx(1.0) and first.current == 5.0
    assert first.still_worse == pytest.approx(-0.5) and not first.is_open(0.02)
    assert second.worsening == pytest.approx(-0.75) and not second.is_open(0.02)
    assert first.describe() == (
        "demo::p tpot_ms [host cpu hf 5.0]: 10 -> 20 (+100.0%, now 5) from run #104 (2026-01-05 00:00, commit c04); "
        "last run before: run #103 (2026-01-04 00:00, commit c03); bisect c03..c04 (plausible range c02..c05)"
    )
    assert second.describe() == (
        "demo::p tpot_ms [host cpu hf 5.0]: 20 -> 5 (-75.0%, now 5) from run #108 (2026-01-09 00:00, commit c08); "
        "last run before: run #107 (2026-01-08 00:00, commit c07); bisect c07..c08"
    )


def test_a_range_never_reaches_past_the_next_change():
    series = _series([10.0, 10.3, 9.7, 10.0, 10.4, 9.9, 10.6, 10.5])
    assert history_check.findings([series], penalty=4.0) == []
    (found,) = history_check.findings([series], penalty=0.5)  # plausible 2..6 of 8 runs
    assert (found.range_before.id, found.range_after.id) == (101, 106)
    assert (found.last_before.id, found.first_after.id) == (105, 106)


def test_open_means_worse_beyond_the_threshold_at_the_change_and_still_now():
    series = _series([10, 10, 10, 10, 11, 11, 11, 11])
    (found,) = history_check.findings([series])
    assert found.worsening == pytest.approx(0.1) and found.still_worse == pytest.approx(0.1)
    assert found.is_open(0.0999) and not found.is_open(0.1)
    faster = _series([10, 10, 10, 10, 11, 11, 11, 11], metric="decode_tokens_per_s")  # higher is better
    (rose,) = history_check.findings([faster])
    assert rose.worsening == pytest.approx(-0.1) and rose.still_worse == pytest.approx(-0.1) and not rose.is_open(0)
    undirected = _series([10, 10, 10, 10, 11, 11, 11, 11], metric="an_engine_counter")
    (counted,) = history_check.findings([undirected])
    assert counted.higher_is_better is None and counted.worsening == 0.0 and not counted.is_open(-1)


def test_a_level_that_started_at_zero_is_never_still_worse():
    zero = ChangePoint(4, 4, 4, before=0.0, after=1.0)
    series = _series([0, 0, 0, 0, 1, 1, 1, 1])
    finding = history_check.Finding(series, zero, False, 1.0, 1.0, *series.runs[3:5], *series.runs[3:5])
    assert finding.still_worse == 0.0


def test_the_check_keeps_open_changes_and_calls_the_recent_ones_regressions():
    series = _series([10, 10, 10, 10, 11, 11, 11, 11])  # the change's first run after is run 4 of 8
    runs = series.runs
    assert [f.first_after.id for f in history_check.check([series], runs, since=4).regressions] == [104]
    late = history_check.check([series], runs, since=3)
    assert late.regressions == [] and len(late.open) == 1 and (late.n_series, late.n_runs) == (1, 8)
    assert history_check.check([series], runs, since=0).regressions == []
    assert history_check.check([series], runs, threshold=0.1).open == []
    assert history_check.DEFAULT_SINCE == 7 and history_check.check([series], runs).regressions != []


def _finding(worsening: float, current: float, commits=True, fingerprint=True) -> history_check.Finding:
    values = [10, 10, 10, 10, 11, 11, 11, 11]
    series = _series(values)
    if not commits:
        series.runs = [RunInfo(r.id, r.position, r.started_at, None, r.host, r.source, 1) for r in series.runs]
    if not fingerprint:
        series.fingerprint = FingerprintKey(None, None, None, None, None)
    before, after, earlier = series.runs[3], series.runs[4], series.runs[2]
    change = ChangePoint(4, 3, 4, before=10.0, after=11.0)
    return history_check.Finding(series, change, False, worsening, current, before, after, earlier, after)


def test_both_worsenings_must_be_beyond_the_threshold():
    assert _finding(0.2, 12.0).is_open(0.1)
    assert not _finding(0.1, 12.0).is_open(0.1)  # worse at the change exactly by the threshold
    assert not _finding(0.2, 11.0).is_open(0.1)  # now exactly the threshold worse


def test_a_finding_without_commits_or_fingerprint_still_reads():
    assert _finding(0.1, 11.0, commits=False, fingerprint=False).describe() == (
        "demo::p tpot_ms [no fingerprint]: 10 -> 11 (+10.0%, now 11) from run #104 (2026-01-05 00:00, commit no commit); "
        "last run before: run #103 (2026-01-04 00:00, commit no commit); bisect ?..? (plausible range ?..?)"
    )


def test_the_check_passes_its_penalty_on():
    weak = _series([10.0, 10.3, 9.7, 10.0, 10.4, 9.9, 10.6, 10.5])
    assert history_check.check([weak], weak.runs).open == []
    (found,) = history_check.check([weak], weak.runs, penalty=0.5).open
    assert found.first_after.id == 106 and found.worsening == pytest.approx(0.055)
