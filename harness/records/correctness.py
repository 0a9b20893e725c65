"""Record parts of the correctness gate: its result, each prompt's comparison, the reference, the path and the
power (the verdict words: ``harness.records.gate_verdicts``; the KL tier's parts: ``harness.records.kl_tier``;
the same-weights check: ``harness.records.own_weights``; the diagnosis of a failure:
``harness.records.gate_diagnosis``). The gate (``harness.correctness.gate``) builds them; the record stores
them as they are."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field, field_validator

from harness.records.base import Part
from harness.records.beams import BeamCheck
from harness.records.gate_diagnosis import Diagnosis
from harness.records.gate_verdicts import RULES, TOP_K, Verdict
from harness.records.kl_tier import GatePhases, KLDistribution, PairedTest, PositionBucket
from harness.records.own_weights import SameWeights
from harness.records.speculative import SpeculativeGate
from harness.records.stopping import StopCheck
from harness.records.text_path import TextPath
from harness.records.token_classes import ClassCheck


class Divergence(Part):
    """Where the device and the reference part at one prompt position, with both sides' top-k there as
    (id, log-probability) pairs; ``ok``: each side's token is in the other's top-k."""

    prompt: int
    position: int
    reference_token: Optional[int]
    device_token: Optional[int]
    reference_topk: list[tuple[int, float]]
    device_topk: list[tuple[int, float]]  # empty where the engine exposes only its chosen token
    ok: bool
    why: str = ""
    tie_gap: Optional[float] = None  # nats by which a miss fell outside a top-k, where forgiven as a near tie


class PromptResult(Part):
    """One gate prompt's comparison (``harness.correctness.stepwise``, ``.prefill``); None: that check did not run."""

    prompt: int
    kind: str  # plain | chat | long | long-prefill (harness.correctness.lengths)
    free_ok: Optional[bool] = None
    free_divergence: Optional[int] = None  # first differing position; None when identical
    free_matched_tokens: Optional[int] = None
    forced_ok: Optional[bool] = None
    forced_first_violation: Optional[int] = None
    forced_violations: int = 0
    top1_match_rate: Optional[float] = None
    kl_mean: Optional[float] = None
    kl_max: Optional[float] = None
    cosine_min: Optional[float] = None
    failures: list[Divergence] = Field(default_factory=list)  # the first of each check that failed
    # Teacher-forced, per generated position (for the report's KL plot and ``harness export``):
    # KL(reference || device) to 4 significant digits (None in top-1 mode), and 1/0 top-1 agreement.
    position_kl: Optional[list[float]] = None
    position_top1: Optional[list[int]] = None
    position_kl_reverse: Optional[list[float]] = None  # KL(device || reference), same partition and digits
    prefill_kl: Optional[list[float]] = None  # KL at the prompt's prefill positions (harness.correctness.prefill)
    prefill_ok: Optional[bool] = None  # the two-way top-k check at those positions (None: not run)
    prefill_violations: int = 0
    # Top-k misses forgiven as near ties (harness.correctness.ties): within Correctness.tie_margin nats of the
    # k-th candidate, over every top-k check of the prompt; the widest such gap (None: none).
    topk_ties: int = 0
    topk_tie_gap: Optional[float] = None


class ReferenceInfo(Part):
    """The HF reference a gate compared against."""

    created_at: Optional[str] = None
    versions: dict[str, Any] = Field(default_factory=dict)
    noise_floor: Optional[dict[str, Any]] = None
    prompts: Optional[int] = None
    tokens: Optional[int] = None
    # Seconds this launch spent getting its stored references, within the time split's gate_s: the gate's,
    # and the same-weights, dequantized-model and stop prompts' ones where those checks ran; computing them
    # (then stored for later runs) or reading the stored ones; None in older records. ``harness plan`` leaves it
    # out of a point's measured cost: the next run on this runner reads the stored reference.
    obtained_s: Optional[float] = None


class GatePath(Part):
    """Where the gate's step-wise figures came from: the engine path that was timed, as far as the engine
    exposes it. ``checks``: what ran on it (``topk-free``, ``topk-forced``, ``kl``, ``forced-top1``);
    ``notes``: where the gate's path differs from the timed one, and why."""

    device: str
    config: dict[str, Any] = Field(default_factory=dict)
    cache: Optional[str] = None
    prefill_chunk: Optional[int] = None
    checks: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class GatePower(Part):
    """``gate.power``: the detectable rise asked for, what the prompts reached, and how many prompts and
    teacher-forced positions were used (the widening reaches ``gate.min_positions`` first)."""

    target: float
    detectable: Optional[float] = None
    prompts: int = 0
    positions: int = 0  # 0 in records before it
    reached: bool = False
    why: Optional[str] = None


class Correctness(Part):
    """The correctness gate's result. In top-1 mode (engines that expose only their chosen token)
    there is no KL tier: ``kl_mean`` and ``kl_ratio`` are None. ``skipped`` says why no gate ran."""

    verdict: Optional[Verdict] = None  # None when skipped
    reasons: list[str] = Field(default_factory=list)  # why it failed, drifted or was not judged
    failed_by: list[str] = Field(default_factory=list)  # RULES a fail verdict failed by; empty in older records
    k: Optional[int] = None
    tie_margin: Optional[float] = None  # nats: a top-k miss within it of the k-th candidate is a near tie (None: older)
    tie_margin_checks: list[str] = Field(default_factory=list)  # the checks that take it, a condition's beside it
    # nats: a prefill position's near tie is forgiven only where its KL is at most this (the prefill phase's fail
    # line; harness.correctness.prefill.tie_line); None where the prefill positions were not checked, or older
    prefill_tie_line: Optional[float] = None
    mode: Optional[str] = None  # free | forced | both | forced-top1
    kl_mean: Optional[float] = None
    noise_floor: Optional[float] = None
    kl_ratio: Optional[float] = None
    top1_match_rate: Optional[float] = None
    free_divergence_index: Optional[int] = None
    prompts: list[PromptResult] = Field(default_factory=list)
    reference: Optional[ReferenceInfo] = None
    report: Optional[str] = None
    diagnosis: Optional[Diagnosis] = None  # where a failed point departs from HF (informational)
    skipped: Optional[str] = None
    same_weights: Optional[SameWeights] = None  # None: not compared with its own weights (records before it)
    phases: Optional[GatePhases] = None  # None in top-1 mode and in records made before phases
    distribution: Optional[KLDistribution] = None
    text_path: Optional[TextPath] = None  # the engine's own input path (None: records before it)
    buckets: Optional[list[PositionBucket]] = None  # KL by position; None in top-1 mode and older records
    length: Optional[int] = None  # positions of the long prompts (harness.correctness.lengths); None: short only
    test: Optional[PairedTest] = None  # the overall KL tier's test (None in top-1 mode and older records)
    min_positions: Optional[int] = None
    notes: list[str] = Field(default_factory=list)  # what the gate did not judge, and why
    path: Optional[GatePath] = None
    power: Optional[GatePower] = None
    beams: Optional[BeamCheck] = None  # points timed with beam_width > 1 (None: greedy points, older records)
    stopping: Optional[StopCheck] = None  # the engine's own stopping (None: older records)
    classes: Optional[ClassCheck] = None  # KL per token class and the flip rate (None: older records)

    def failure_label(self) -> str:
        """What failed, by rule: "top-5 agreement", "drift rule", "KL tier and text path"; "gate" where the
        record does not say (records before ``failed_by``)."""
        names = [f"top-{self.k} agreement" if rule == TOP_K and self.k else rule for rule in self.failed_by]
        return " and ".join(names) or "gate"

    @field_validator("failed_by")
    @classmethod
    def _known_rules(cls, value: list[str]) -> list[str]:
        unknown = [rule for rule in value if rule not in RULES]
        if unknown:
            raise ValueError(f"unknown rule(s) {unknown}; expected some of {list(RULES)}")
        return value

    speculative: Optional[SpeculativeGate] = None  # a speculative point's greedy equality with its plain path

    @field_validator("reference", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        return value or None
