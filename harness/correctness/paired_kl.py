"""The KL tier's test: per-position KL paired with the noise floor's KL at the same position.

At teacher-forced position i the device's KL(reference || device) is paired with the floor's KL there
(the reference dtype against fp32, ``Reference.noise_floor["positions"]``)::

    r_i = ln((kl_i + m) / (floor_i + m)),   m = the reference's minimum floor (``kl.offset_of``)

A CPU's bf16 path moves the floor and a device's KL together, position by position (a confident
position is quiet on both sides, an uncertain one loud on both), so the pairs cancel what the machine
adds and what is left is what the device adds. ``rise = exp(mean r)`` is the geometric-mean factor by
which the device's KL exceeds the floor; ``rise_low`` its one-sided lower confidence bound at
``1 - ALPHA``. A line F (``drift_factor``, ``fail_factor``) is crossed when ``rise_low > F``: a one-sided
test of "rise <= F", paired by position. ``margin = rise_low / F`` of the line that fails the point.

The standard error of ``mean r`` is the larger of the positions' (s / sqrt(n)) and a bootstrap over
prompts (positions of one prompt are correlated; fixed seed, so the verdict is reproducible).
``detectable`` is the smallest true rise the drift line catches with ``POWER`` (80 %) power on this
prompt set: ``F_drift * exp((z(1 - ALPHA) + z(POWER)) * se)``.

References stored before per-position floors pair every position with its phase's mean floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

ALPHA = 0.01  # one-sided: a benign point sits near 1x, far below any line, so this buys power, not false fails
POWER = 0.80
BOOTSTRAP = 2000
MIN_PROMPTS_FOR_BOOTSTRAP = 3


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


@dataclass(frozen=True)
class PairedRise:
    positions: int
    rise: float
    rise_low: float
    se: float
    se_source: str  # "positions" | "prompts"
    detectable: float  # against the drift line


def log_ratios(device: Sequence[Sequence[float]], floor: Sequence[Sequence[float]], offset: float) -> list[list[float]]:
    """Per prompt, ln((kl + m) / (floor + m)) per position, m = ``offset`` (the gate's minimum floor)."""
    return [[math.log((d + offset) / (f + offset)) for d, f in zip(dev, flo)] for dev, flo in zip(device, floor)]


def standard_error(per_prompt: Sequence[Sequence[float]]) -> tuple[float, str]:
    """(se of the pooled mean, its source): the larger of the positions' and a bootstrap over prompts."""
    pooled = np.asarray([v for values in per_prompt for v in values], dtype=np.float64)
    n = len(pooled)
    se = float(pooled.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    source = "positions"
    prompts = [np.asarray(v, dtype=np.float64) for v in per_prompt if len(v)]
    if len(prompts) >= MIN_PROMPTS_FOR_BOOTSTRAP:
        sums, counts = np.array([p.sum() for p in prompts]), np.array([len(p) for p in prompts])
        picks = np.random.default_rng(0).integers(0, len(prompts), size=(BOOTSTRAP, len(prompts)))
        boot = float(np.std(sums[picks].sum(axis=1) / counts[picks].sum(axis=1), ddof=1))
        if boot > se:
            se, source = boot, "prompts"
    return se, source


def paired_rise(per_prompt: Sequence[Sequence[float]], drift_factor: float) -> Optional[PairedRise]:
    """The rise of the device's KL over the floor from per-prompt log-ratios, or None without positions."""
    pooled = [v for values in per_prompt for v in values]
    if not pooled:
        return None
    mean = float(np.mean(pooled))
    se, source = standard_error(per_prompt)
    z_alpha = _z(1 - ALPHA)
    low = mean - z_alpha * se if math.isfinite(se) else -math.inf
    detectable = drift_factor * math.exp((z_alpha + _z(POWER)) * se) if math.isfinite(se) else math.inf
    return PairedRise(len(pooled), math.exp(mean), math.exp(low), se, source, detectable)


def positions_needed(detectable: float, drift_factor: float, target: float) -> Optional[float]:
    """How many times more positions bring ``detectable`` down to ``target`` (se shrinks as 1/sqrt(n)),
    or None when no number can: a target at or below the drift line itself."""
    if target <= drift_factor:
        return None
    if detectable <= target:
        return 1.0
    return (math.log(detectable / drift_factor) / math.log(target / drift_factor)) ** 2
