"""Launch statistics' variance components at their edges (harness.measure.launch_stats.intervals with
harness.measure.noise), on hand-built launches and rounds. Each assertion is here because a mutant survived
without it (``python benchmarks/mutation.py launches``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.measure.launch_stats import intervals
from harness.records.samples import Launch, RoundSample


def _round(launch: int, ttft_ms: float) -> RoundSample:
    return RoundSample(
        prompt_index=0, prompt_tokens=4, batch_size=1, ttft_s=ttft_ms / 1e3, gaps_s=[], e2e_s=1.0, launch=launch
    )


def test_intervals_carry_the_variance_components_of_the_ok_launches_rounds():
    launches = [
        Launch(index=0, medians={"ttft_ms": 105.0, "tpot_ms": 5.0, "energy_per_token_mj": 2.0}, rounds=2),
        Launch(index=1, medians={"ttft_ms": 130.0, "tpot_ms": 6.0, "energy_per_token_mj": 3.0}, rounds=3),
        Launch(index=2, status="failed", medians={"ttft_ms": 900.0}, rounds=1),
    ]
    rounds = [_round(0, 100), _round(0, 110), _round(1, 120), _round(1, 130), _round(1, 140), _round(2, 900)]
    found = intervals(launches, rounds)["ttft_ms"]
    # within: pooled variance (50 + 2 * 100) / 3 over the mean 120; between: the launch means' variance
    # 312.5 less within / 2.4 rounds (their harmonic mean), over 120
    assert found.within_cv == pytest.approx((250 / 3) ** 0.5 / 120, rel=1e-12)
    assert found.between_cv == pytest.approx(1 / 7.2, rel=1e-12)
    assert found.rounds_per_launch == pytest.approx(2.4, rel=1e-12)
    assert (found.estimate, found.launches, found.samples) == (117.5, 2, 5)
    # the rounds hold no gaps (no tpot per round) and energy has no per-round figure: no components either
    for name in ("tpot_ms", "energy_per_token_mj"):
        found = intervals(launches, rounds)[name]
        assert (found.launches, found.within_cv, found.between_cv, found.rounds_per_launch) == (2, None, None, None)
    bare = intervals(launches)["ttft_ms"]  # no rounds stored: no components
    assert (bare.within_cv, bare.between_cv, bare.rounds_per_launch) == (None, None, None)
