"""Change-point detection on synthetic nightly series (pure functions, no database)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.history.changepoints import DEFAULT_PENALTY, ChangePoint, detect, noise

NIGHTS, STEP_AT, STEP, CV = 60, 20, 0.03, 0.02


def series(seed: int, n: int = NIGHTS, step_at: int | None = None, step: float = STEP) -> np.ndarray:
    """Nights at 2 % CV around 100; from ``step_at`` on, ``step`` higher."""
    values = 100 * (1 + CV * np.random.default_rng(seed).standard_normal(n))
    if step_at is not None:
        values[step_at:] *= 1 + step
    return values


def test_a_3_percent_step_after_20_nights_is_found_at_the_right_night():
    changes = detect(series(seed=1, step_at=STEP_AT))
    assert [c.index for c in changes] == [STEP_AT]
    (change,) = changes
    assert change.earliest <= STEP_AT <= change.latest
    assert change.relative == pytest.approx(STEP, abs=0.01)
    assert change.worsening(higher_is_better=False) > 0 > change.worsening(higher_is_better=True)


def test_60_nights_of_noise_give_no_change_point_at_the_default_penalty():
    assert detect(series(seed=1000)) == []


def test_the_step_is_found_over_many_seeds_and_its_plausible_range_holds_the_true_night():
    """A 1.5-sigma step cannot always be placed to the night; it is found near it, and the range of
    plausible nights reported with it holds the true one."""
    found = [detect(series(seed, step_at=STEP_AT)) for seed in range(50)]
    near = sum(any(abs(c.index - STEP_AT) <= 5 for c in changes) for changes in found)
    exact = sum([c.index for c in changes] == [STEP_AT] for changes in found)
    covered = sum(any(c.earliest <= STEP_AT <= c.latest for c in changes) for changes in found)
    assert near >= 38 and exact >= 15 and covered >= 45, (near, exact, covered)


def test_noise_alone_rarely_gives_a_change_point_over_many_seeds():
    false_alarms = sum(bool(detect(series(seed))) for seed in range(1000, 1200))
    assert false_alarms <= 4  # 0.5 % expected at the default penalty


def test_a_lower_penalty_finds_more_and_a_year_of_noise_stays_quiet():
    assert sum(bool(detect(series(s), penalty=1.0)) for s in range(1000, 1050)) > sum(
        bool(detect(series(s), penalty=DEFAULT_PENALTY)) for s in range(1000, 1050)
    )
    assert sum(bool(detect(series(s, n=365))) for s in range(20)) <= 1


def test_a_big_step_shows_on_the_second_night_after_it():
    values = series(seed=3, n=30)
    values[28:] *= 1.15
    assert [c.index for c in detect(values)] == [28]


def test_short_constant_and_non_finite_series_have_no_change_points():
    assert detect([1.0, 2.0, 3.0]) == []
    assert detect([5.0] * 40) == []
    assert detect([1.0] * 10 + [float("nan")] + [1.0] * 10) == []
    assert noise([5.0] * 10) > 0  # a scale even without noise


def test_direction_decides_whether_a_change_worsens():
    drop = ChangePoint(index=10, earliest=9, latest=11, before=100.0, after=95.0)
    assert drop.relative == pytest.approx(-0.05)
    assert drop.worsening(higher_is_better=True) == pytest.approx(0.05)  # throughput fell: worse
    assert drop.worsening(higher_is_better=False) == pytest.approx(-0.05)  # latency fell: better
