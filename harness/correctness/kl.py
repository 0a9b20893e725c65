"""The gate's KL figures by phase and as a distribution: pure functions of per-position KLs.

The **prefill** phase is the logits of prompt prefixes' forwards: the last ``gate.prefill_positions``
prompt positions of each prompt (``harness.correctness.prefill``), or, against a reference stored before
them, teacher-forced position 0 alone (the whole prompt's forward). Every later teacher-forced position is
the **decode** phase (one token with the cache). A fault that touches only decode steps leaves the
prefill positions exact, so each phase is judged against its own noise floor, with the same drift/fail
factors, and the point takes the worse of the phases' tiers and of the overall one. A tier compares its
mean KL over its mean floor with the gate's lines (``GateSettings``), never on fewer than ``min_positions`` positions: a phase with
fewer (one prefill position per prompt, on a few prompts) is pooled into the overall tier, not judged
alone. Beside each, the paired test of ``harness.correctness.paired_kl`` (device KL against the floor's KL at
the same position) is recorded.

Distribution figures (median, p90, p99, max) pool every teacher-forced position of every prompt.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.correctness import paired_kl
from harness.records.kl_tier import GatePhase, GatePhases, KLDistribution, KLSpread, PairedTest
from harness.scenario.gate_section import GateSettings

MIN_FLOOR = 1e-5  # a floor of ~0 (identical precision) must not make every difference a failure
PHASES = ("prefill", "decode")
OLD_REFERENCE = (
    "reference stored before per-phase noise floors: both phases are judged against its overall "
    "floor (--refresh-reference recomputes it with per-phase floors)"
)


def split(per_prompt: Sequence[Sequence[float]]) -> dict[str, list[list[float]]]:
    """Per phase, per prompt: the prefill position and the decode positions."""
    return {
        "prefill": [list(values[:1]) for values in per_prompt],
        "decode": [list(values[1:]) for values in per_prompt],
    }


def by_phase(per_prompt: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """Per-position values of every prompt split into the prefill position and the decode positions."""
    return {phase: [v for values in parts for v in values] for phase, parts in split(per_prompt).items()}


def phase_floors(
    per_prompt: Sequence[Sequence[float]], prefill: Optional[Sequence[Sequence[float]]] = None
) -> dict[str, dict]:
    """The reference's per-phase noise floor, as stored: ``{phase: {kl_mean, positions}}``; ``prefill``, per
    prompt the floor at its prefill positions, replaces teacher-forced position 0 where given."""
    found = by_phase(per_prompt)
    if prefill is not None:
        found["prefill"] = [v for values in prefill for v in values]
    return {
        phase: {"kl_mean": float(np.mean(values)) if values else None, "positions": len(values)}
        for phase, values in found.items()
    }


def position_floors(per_prompt: Sequence[Sequence[float]]) -> list[list[float]]:
    """The reference's per-position noise floor, as stored (4 significant digits)."""
    return [[float(f"{v:.4g}") for v in values] for values in per_prompt]


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


def paired_floor(per_prompt: Sequence[Sequence[float]], noise_floor: dict) -> tuple[list[list[float]], str]:
    """The floor's KL at each of the device's positions: the stored per-position floor (``"positions"``),
    or each phase's mean floor repeated (``"mean"``) for a reference stored before per-position floors."""
    stored = noise_floor.get("positions")
    if (
        stored is not None
        and len(stored) == len(per_prompt)
        and all(map(lambda s, d: len(s) >= len(d), stored, per_prompt))
    ):
        return [list(s[: len(d)]) for s, d in zip(stored, per_prompt)], "positions"
    floors = floors_of(noise_floor)
    prefill, decode = floors["prefill"][0], floors["decode"][0]
    return [[prefill, decode, *[decode] * (len(d) - 2)][: len(d)] for d in per_prompt], "mean"


def tier(ratio: Optional[float], drift_factor: float, fail_factor: float) -> Optional[str]:
    if ratio is None:
        return None
    return "fail" if ratio > fail_factor else "drift" if ratio > drift_factor else "pass"


def offset_of(noise_floor: dict) -> float:
    """The KL added to both sides of every pair: the reference's own minimum floor (the same-weights one is
    1e-4, so paths that agree to the last bit do not fail on rounding), never below ``MIN_FLOOR``."""
    return max(MIN_FLOOR, noise_floor.get("minimum") or 0.0)


def paired_test(
    device: Sequence[Sequence[float]],
    floor: Sequence[Sequence[float]],
    source: str,
    settings: GateSettings,
    offset: float,
) -> Optional[PairedTest]:
    """The paired test of device KL against the floor's, position by position (``harness.correctness.paired_kl``)."""
    found = paired_kl.paired_rise(paired_kl.log_ratios(device, floor, offset), settings.drift_factor)
    if found is None:
        return None
    return PairedTest(
        positions=found.positions,
        rise=found.rise,
        rise_low=found.rise_low,
        line=settings.failing,
        margin=found.rise_low / settings.failing,
        detectable=found.detectable,
        alpha=paired_kl.ALPHA,
        se_source=found.se_source,
        floor=source,
    )


def phases(
    per_prompt: Sequence[Sequence[float]],
    noise_floor: dict,
    settings: GateSettings,
    prefill: Optional[tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]] = None,
) -> GatePhases:
    """Each phase's mean KL, floor and ratio (shown), and its paired test and tier (``fail_on_drift`` is
    applied by the caller); a phase with fewer than ``settings.min_positions`` positions is pooled, not judged.
    ``prefill``: (device, floor) KLs per prompt at its prefill positions, in place of position 0."""
    floors = floors_of(noise_floor)
    floor_positions, source = paired_floor(per_prompt, noise_floor)
    device_parts, floor_parts = split(per_prompt), split(floor_positions)
    if prefill is not None:
        device_parts["prefill"], floor_parts["prefill"] = [list(v) for v in prefill[0]], [list(v) for v in prefill[1]]
    parts = {}
    for phase in PHASES:
        values = [v for vs in device_parts[phase] for v in vs]
        floor, floor_source = floors[phase]
        mean = float(np.mean(values)) if values else None
        judged = len(values) >= settings.min_positions
        test = (
            paired_test(device_parts[phase], floor_parts[phase], source, settings, offset_of(noise_floor))
            if judged
            else None
        )
        parts[phase] = GatePhase(
            kl_mean=mean,
            noise_floor=floor,
            kl_ratio=mean / floor if mean is not None else None,
            positions=len(values),
            verdict=tier(mean / floor, settings.drift_factor, settings.fail_factor)
            if test and mean is not None
            else None,
            floor_source=floor_source,
            test=test,
            pooled=not judged,
        )
    fallback = "phases" not in noise_floor
    return GatePhases(**parts, note=OLD_REFERENCE if fallback else None)


def overall_test(
    per_prompt: Sequence[Sequence[float]], noise_floor: dict, settings: GateSettings
) -> Optional[PairedTest]:
    """The test over every position of every prompt, or None below ``settings.min_positions``."""
    if sum(map(len, per_prompt)) < settings.min_positions:
        return None
    floor, source = paired_floor(per_prompt, noise_floor)
    return paired_test(per_prompt, floor, source, settings, offset_of(noise_floor))


def judge(
    ratio: Optional[float], overall: Optional[PairedTest], parts: Optional[GatePhases], settings: GateSettings
) -> tuple[list[str], list[str]]:
    """(fail reasons, drift reasons) of the KL tiers: the overall mean ratio's and each judged phase's, each
    only where its paired test ran (``min_positions`` reached); the paired figures are quoted beside it."""
    tiers = [("mean KL", ratio if overall is not None else None, overall)]
    if parts is not None:
        tiers += [
            (f"{name}-phase mean KL", getattr(parts, name).kl_ratio, getattr(parts, name).test) for name in PHASES
        ]
    fails: list[str] = []
    drifts: list[str] = []
    for label, value, test in tiers:
        if test is None or value is None:
            continue
        verdict = tier(value, settings.drift_factor, settings.fail_factor)
        line = settings.fail_factor if verdict == "fail" else settings.drift_factor
        text = (
            f"{label} is {value:.1f}x its noise floor over {test.positions} positions, {verdict} above {line:g}x "
            f"(paired by position: {test.rise:.1f}x, >= {test.rise_low:.1f}x at {1 - test.alpha:.0%} confidence)"
        )
        (fails if verdict == "fail" else drifts if verdict == "drift" else []).append(text)
    return fails, drifts


def too_few(per_prompt: Sequence[Sequence[float]], settings: GateSettings) -> Optional[str]:
    """Why no KL verdict: fewer positions than ``settings.min_positions``, or None."""
    n = sum(map(len, per_prompt))
    if n >= settings.min_positions:
        return None
    return f"KL tier not judged: {n} teacher-forced positions, fewer than gate.min_positions={settings.min_positions}"


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
