"""The gate's KL figures by phase and as a distribution: pure functions of per-position KLs.

Teacher-forced position 0 of a prompt is the **prefill** phase (the logits of the whole prompt's
forward); every later position is the **decode** phase (one token with the cache). A fault that touches
only decode steps leaves the prefill position exact, so each phase is judged against its own noise
floor, with the same drift/fail factors, and the point takes the worse of the phases' tiers (and of the
overall mean's, as before). A phase's mean pools its positions over all prompts.

Distribution figures (median, p90, p99, max) pool every teacher-forced position of every prompt.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.records.record import GatePhase, GatePhases, KLDistribution, KLSpread

MIN_FLOOR = 1e-5  # a floor of ~0 (identical precision) must not make every difference a failure
PHASES = ("prefill", "decode")
OLD_REFERENCE = (
    "reference stored before per-phase noise floors: both phases are judged against its overall "
    "floor (--refresh-reference recomputes it with per-phase floors)"
)


def by_phase(per_prompt: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """Per-position values of every prompt split into the prefill position and the decode positions."""
    return {
        "prefill": [v for values in per_prompt for v in values[:1]],
        "decode": [v for values in per_prompt for v in values[1:]],
    }


def phase_floors(per_prompt: Sequence[Sequence[float]]) -> dict[str, dict]:
    """The reference's per-phase noise floor, as stored: ``{phase: {kl_mean, positions}}``."""
    return {
        phase: {"kl_mean": float(np.mean(values)) if values else None, "positions": len(values)}
        for phase, values in by_phase(per_prompt).items()
    }


def floors_of(noise_floor: dict) -> dict[str, tuple[float, str]]:
    """(floor, source) per phase: the stored per-phase floor (``"phase"``), or the overall floor
    (``"overall"``) for a reference stored before per-phase floors or a phase without positions."""
    overall = max(noise_floor["kl_mean"], MIN_FLOOR)
    stored = noise_floor.get("phases") or {}
    found = {phase: (stored.get(phase) or {}).get("kl_mean") for phase in PHASES}
    return {
        phase: (overall, "overall") if value is None else (max(value, MIN_FLOOR), "phase")
        for phase, value in found.items()
    }


def tier(ratio: Optional[float], drift_factor: float, fail_factor: float) -> Optional[str]:
    if ratio is None:
        return None
    return "fail" if ratio > fail_factor else "drift" if ratio > drift_factor else "pass"


def phases(
    per_prompt: Sequence[Sequence[float]], noise_floor: dict, drift_factor: float, fail_factor: float
) -> GatePhases:
    """Each phase's mean KL, floor, ratio and KL tier (``fail_on_drift`` is applied by the caller)."""
    floors = floors_of(noise_floor)
    parts = {}
    for phase, values in by_phase(per_prompt).items():
        floor, source = floors[phase]
        mean = float(np.mean(values)) if values else None
        ratio = mean / floor if mean is not None else None
        parts[phase] = GatePhase(
            kl_mean=mean,
            noise_floor=floor,
            kl_ratio=ratio,
            positions=len(values),
            verdict=tier(ratio, drift_factor, fail_factor),
            floor_source=source,
        )
    fallback = "phases" not in noise_floor
    return GatePhases(**parts, note=OLD_REFERENCE if fallback else None)


def judge(
    kl_mean: Optional[float],
    ratio: Optional[float],
    floor: float,
    parts: Optional[GatePhases],
    drift_factor: float,
    fail_factor: float,
) -> tuple[list[str], list[str]]:
    """(fail reasons, drift reasons) of the KL tiers: the overall mean's (as before phases) and each phase's."""
    tiers = [("mean KL", kl_mean, ratio, "the noise floor", floor, tier(ratio, drift_factor, fail_factor))]
    if parts is not None:
        tiers += [
            (f"{name}-phase mean KL", p.kl_mean, p.kl_ratio, "its noise floor", p.noise_floor, p.verdict)
            for name, p in (("prefill", parts.prefill), ("decode", parts.decode))
        ]
    fails = [
        f"{label} {kl:.3g} is {times:.0f}x {against} {base:.3g} (fail above {fail_factor:g}x)"
        for label, kl, times, against, base, verdict in tiers
        if verdict == "fail"
    ]
    drifts = [
        f"{label} {kl:.3g} is {times:.1f}x {against} {base:.3g} (drift above {drift_factor:g}x)"
        for label, kl, times, against, base, verdict in tiers
        if verdict == "drift"
    ]
    return fails, drifts


def spread(values: Sequence[float]) -> Optional[KLSpread]:
    if not len(values):
        return None
    median, p90, p99 = np.percentile(np.asarray(values, dtype=np.float64), [50, 90, 99])
    return KLSpread(median=median, p90=p90, p99=p99, max=float(np.max(values)), positions=len(values))


def distribution(
    forward: Sequence[Sequence[float]], reverse: Sequence[Sequence[float]], top1: Sequence[Sequence[int]]
) -> KLDistribution:
    """Pooled over every position of every prompt: both KL directions' spread and the top-1 agreement."""
    agree = [a for values in top1 for a in values]
    return KLDistribution(
        forward=spread([v for values in forward for v in values]),
        reverse=spread([v for values in reverse for v in values]),
        top1_agreement=float(np.mean(agree)) if agree else None,
        top1_positions=len(agree),
    )
