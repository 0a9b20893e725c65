"""The gate's per-token-class KL tiers and its flip rate, from the teacher-forced positions the gate compared.

Each teacher-forced position goes in the class of the token it predicts (``harness.correctness.token_classes``).
A class's mean KL is judged against the mean of the reference's noise floor at the very same positions (the
stored per-position floor), with the gate's drift and fail factors, once it holds ``MIN_POSITIONS`` positions and
the point has more than one class: like a position bucket (``harness.correctness.positions``), so a fault that
only hits digits fails by its class instead of averaging away among the words.

The **flip rate** is the share of *decided* positions, where the reference's top-1 log-probability leads its
second by more than ``TIE_MARGIN`` nats (the top-k checks' own, ``harness.correctness.ties``), whose top-1
the engine changed. Near ties are left out: there a clean
engine in another precision may pick either token. A flip rate above ``FLIP_LINE`` over at least the gate's
``min_positions`` decided positions is marked drift in the record and printed, and changes no verdict: the line
is absolute, with no floor of its own (the reference's own flips between precisions), and a clean f16 llama.cpp
point on a random-weights model crossed it at KL 1.0x its floor. Beside it, the rate to expect of an engine at
the floor (``harness.correctness.expected_flips``), reported too.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from harness.correctness import expected_flips, token_classes
from harness.correctness.kl import MIN_FLOOR, paired_floor, tier
from harness.correctness.stored_reference import Reference
from harness.correctness.ties import TIE_MARGIN  # the reference's top-1 over its second: at or below, a near tie
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import DRIFT, DRIFT_RULE, FAIL, KL_TIER, NOT_JUDGED, PASS
from harness.records.token_classes import ClassCheck, ClassStat, FlipRate
from harness.scenario.gate_section import GateSettings

MIN_POSITIONS = 16  # a class judged on fewer positions would judge its noise (as a position bucket)
FLIP_LINE = 0.05  # share of decided positions: drift above it


def measure(result: Correctness, reference: Reference, tokenizer, settings: GateSettings) -> ClassCheck:
    """Per-class statistics and the flip rate of a gate result's teacher-forced positions."""
    measured = [r for r in result.prompts if r.position_kl is not None and r.position_top1 is not None]
    if not measured or len(measured) != len(result.prompts):
        return ClassCheck(skipped="no teacher-forced KL on this point (top-1 only, or mode: free)")
    per_prompt = [list(r.position_kl or []) for r in measured]
    floors, _ = paired_floor(per_prompt, reference.noise_floor)
    refs = [reference.prompts[r.prompt] for r in measured]
    classes = token_classes.classify(tokenizer, (t for ref in refs for t in ref.tokens), reference.settings["eos_ids"])
    rows: dict[str, list[tuple[float, float, int, bool]]] = {}  # class: (kl, floor, top-1 agrees, decided)
    leads: list[tuple[list[float], float]] = []  # decided positions: (the reference's top-M, the floor's KL)
    for r, ref, floor in zip(measured, refs, floors):
        for position, (kl, agree) in enumerate(zip(r.position_kl or [], r.position_top1 or [])):
            lps = ref.top_logprobs[position]
            decided = len(lps) > 1 and lps[0] - lps[1] > TIE_MARGIN
            rows.setdefault(classes[ref.tokens[position]], []).append((kl, floor[position], agree, decided))
            if decided:
                leads.append((lps, floor[position]))
    judged = len(rows) > 1
    stats = [_stat(name, rows[name], judged, settings) for name in token_classes.CLASSES if name in rows]
    pooled = [(agree, decided) for values in rows.values() for _, _, agree, decided in values]
    flips = sum(1 for agree, decided in pooled if decided and not agree)
    count = sum(1 for _, decided in pooled if decided)
    rate = flips / count if count >= settings.min_positions else None
    flip = FlipRate(
        rate=rate,
        flips=flips,
        decided=count,
        positions=len(pooled),
        tie_margin=TIE_MARGIN,
        line=FLIP_LINE,
        expected_rate=expected_flips.expected_rate(leads),
        expected_method=expected_flips.METHOD,
        verdict=None if rate is None else DRIFT if rate > FLIP_LINE else PASS,
    )
    check = ClassCheck(classes=stats, flips=flip, min_positions=MIN_POSITIONS, method=token_classes.METHOD)
    check.reasons = [*_fails(check, settings), *_drifts(check, settings)]
    return check


def _stat(name: str, rows: list[tuple[float, float, int, bool]], judged: bool, settings: GateSettings) -> ClassStat:
    kls, floors, agree, decided = (list(column) for column in zip(*rows))
    floor = max(float(np.mean(floors)), MIN_FLOOR)
    mean = float(np.mean(kls))
    return ClassStat(
        name=name,
        positions=len(rows),
        kl_mean=mean,
        noise_floor=floor,
        kl_ratio=mean / floor,
        top1_agreement=float(np.mean(agree)),
        decided=sum(decided),
        flips=sum(1 for a, d in zip(agree, decided) if d and not a),
        verdict=tier(mean / floor, settings.drift_factor, settings.fail_factor)
        if judged and len(rows) >= MIN_POSITIONS
        else None,
    )


def _line(stat: ClassStat, word: str, factor: float) -> str:
    return (
        f"{stat.name} positions' mean KL {stat.kl_mean:.3g} is {stat.kl_ratio:.1f}x their noise floor "
        f"{stat.noise_floor:.3g} over {stat.positions} positions ({word} above {factor:g}x)"
    )


def _fails(check: ClassCheck, settings: GateSettings) -> list[str]:
    return [_line(s, "fail", settings.fail_factor) for s in check.classes if s.verdict == FAIL]


def _drifts(check: ClassCheck, settings: GateSettings) -> list[str]:
    # The flip rate is recorded and printed, never a drift of its own: with an absolute line and no floor of its
    # own, a clean f16 point on a random-weights model (flat logits) crossed it at KL 1.0x its floor.
    return [_line(s, "drift", settings.drift_factor) for s in check.classes if s.verdict == DRIFT]


def apply(result: Correctness, reference: Reference, tokenizer, settings: GateSettings) -> Correctness:
    """``result`` with its class check, its verdict worsened by a failing class (the KL tier) or by class or
    flip drift (the drift rule where drift fails the point, else drift, reported)."""
    check = measure(result, reference, tokenizer, settings)
    fails, drifts = _fails(check, settings), _drifts(check, settings)
    verdict: Optional[str] = result.verdict
    reasons, failed_by = list(result.reasons), list(result.failed_by)
    if fails:
        verdict, reasons = FAIL, reasons + fails
        failed_by = failed_by if KL_TIER in failed_by else [*failed_by, KL_TIER]
    elif drifts and settings.fail_on_drift:
        if verdict != FAIL:
            failed_by = failed_by or [DRIFT_RULE]
        verdict, reasons = FAIL, reasons + [*drifts[:-1], drifts[-1] + "; drift fails this point"]
    elif drifts:
        verdict = DRIFT if verdict in (PASS, NOT_JUDGED, None) else verdict
        reasons = reasons + drifts
    return result.model_copy(update={"classes": check, "verdict": verdict, "reasons": reasons, "failed_by": failed_by})
