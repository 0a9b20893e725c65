"""Variance components of a point's timed metrics (Kalibera & Jones, "Rigorous benchmarking in reasonable
time", 2013): how much a metric moves between the rounds of one launch and between launches. Pure functions
of the stored rounds; no I/O.

A launch's figure over r rounds varies as ``between**2 + within**2 / r`` (relative variances): ``within``
is the pooled round-to-round CV inside launches, ``between`` what the launches add on top of it (the
variance of launch means less ``within**2 / r``, floored at zero). More rounds shrink only the second
term; only more launches shrink the first, which is why the launch is the unit the regression check tests.
"""

from __future__ import annotations

import statistics
from typing import Callable, Optional, Sequence

# Per-round figures a component is computed from, by the launch-level metric they summarise.
PER_ROUND: dict[str, Callable] = {
    "ttft_ms": lambda r: r.ttft_s * 1e3,
    "tpot_ms": lambda r: (r.e2e_s - r.ttft_s) / len(r.gaps_s) * 1e3 if r.gaps_s else None,
    "decode_tokens_per_s": lambda r: (
        r.batch_size * len(r.gaps_s) / (r.e2e_s - r.ttft_s) if r.gaps_s and r.e2e_s > r.ttft_s else None
    ),
}


def by_launch(rounds: Sequence, metric: str) -> dict[int, list[float]]:
    """Per-round values of ``metric`` grouped by the launch that timed them (``RoundSample.launch``)."""
    value = PER_ROUND[metric]
    out: dict[int, list[float]] = {}
    for r in rounds:
        found = value(r)
        if found is not None:
            out.setdefault(r.launch, []).append(float(found))
    return out


def components(groups: Sequence[Sequence[float]]) -> tuple[Optional[float], Optional[float]]:
    """(within-launch CV, between-launch CV) from per-round values grouped by launch, both relative to the
    grand mean. ``within`` needs a launch with two rounds; ``between`` needs two launches."""
    groups = [list(g) for g in groups if len(g)]
    every = [v for g in groups for v in g]
    if not every or statistics.fmean(every) <= 0:
        return None, None
    level = statistics.fmean(every)
    spread = [(len(g) - 1, statistics.variance(g)) for g in groups if len(g) >= 2]
    dof = sum(d for d, _ in spread)
    within_var = sum(d * v for d, v in spread) / dof if dof else None
    within = None if within_var is None else within_var**0.5 / level
    if len(groups) < 2:
        return within, None
    rounds = statistics.harmonic_mean([len(g) for g in groups])
    means = [statistics.fmean(g) for g in groups]
    between_var = max(0.0, statistics.variance(means) - (within_var or 0.0) / rounds)
    return within, between_var**0.5 / level


def launch_cv(between: float, within: Optional[float], rounds: float) -> float:
    """The predicted CV of a launch's figure over ``rounds`` rounds from the two components."""
    return (between**2 + (within or 0.0) ** 2 / rounds) ** 0.5
