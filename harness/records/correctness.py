"""Record parts of the correctness gate: the verdict, each prompt's comparison, its phases, the KL distribution,
the same-weights check (the diagnosis of a failure: ``harness.records.gate_diagnosis``). The gate
(``harness.correctness.gate``) builds them; the record stores them as they are."""

from __future__ import annotations

from typing import Any, Literal, Optional, get_args

from pydantic import Field, field_validator

from harness.records.base import Part
from harness.records.beams import BeamCheck
from harness.records.dequantized_audit import DequantizedAudit
from harness.records.gate_diagnosis import Diagnosis
from harness.records.speculative import SpeculativeGate
from harness.records.stopping import StopCheck
from harness.records.text_path import TextPath
from harness.records.token_classes import ClassCheck

# The gate's verdict words, worst first. ``not judged``: the top-k checks passed but the KL tier had fewer
# teacher-forced positions than ``gate.min_positions``, so nothing showed the point within its noise floor;
# like the regression check's ``unknown``, it exits 0 unless ``--fail-on-unknown`` (exit 4).
FAIL, DRIFT, NOT_JUDGED, PASS = "fail", "drift", "not judged", "pass"
Verdict = Literal["fail", "drift", "not judged", "pass"]
VERDICTS: tuple[str, ...] = get_args(Verdict)

# The rules a gate can fail by (``Correctness.failed_by``): a failure message names the rule, since "top-5
# agreement fails" for a point the drift rule failed sent readers to a check that held.
TOP_K, KL_TIER, DRIFT_RULE, TEXT_PATH, SAME_WEIGHTS = (
    "top-k agreement",
    "KL tier",
    "drift rule",
    "text path",
    "same weights",
)
RULES = (TOP_K, KL_TIER, DRIFT_RULE, TEXT_PATH, SAME_WEIGHTS)


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


class KLSpread(Part):
    """Per-position KL pooled over a point's teacher-forced positions (``positions`` of them)."""

    median: float
    p90: float
    p99: float
    max: float
    positions: int


class KLDistribution(Part):
    """``forward``: KL(reference || device); ``reverse``: KL(device || reference); both over the reference's
    stored top-M ids plus one tail bucket, so lower bounds of the full-vocabulary KLs. ``top1_agreement``:
    the share of the ``top1_positions`` positions where the device's top-1 is the reference's token."""

    forward: Optional[KLSpread] = None
    reverse: Optional[KLSpread] = None
    top1_agreement: Optional[float] = None
    top1_positions: int = 0


class PairedTest(Part):
    """The KL tier's test (``harness.correctness.paired_kl``): per-position KL paired with the floor's KL at the
    same position. ``rise``: the geometric-mean factor of device KL over floor KL; ``rise_low``: its one-sided
    lower bound (``alpha``); ``margin``: ``rise_low`` over ``line``, the factor that fails this point (the
    drift line where drift fails, else the fail line); ``detectable``: the smallest rise the drift line
    catches with 80 % power on these positions; ``se_source``: "positions" or "prompts" (bootstrap)."""

    positions: int
    rise: float
    rise_low: float
    line: float
    margin: float
    detectable: float
    alpha: float
    se_source: str
    floor: Literal["positions", "mean"] = "positions"  # "mean": an older reference without per-position floors


class GatePhase(Part):
    """One phase's KL tier (``harness.correctness.kl``): its mean KL over ``positions`` against its own floor;
    ``floor_source`` is "overall" where the reference has no floor for the phase. ``test`` decides the tier;
    a phase with fewer than the gate's ``min_positions`` has none (``verdict`` None, ``pooled`` True): its
    positions count in the point's overall test only."""

    kl_mean: Optional[float] = None
    noise_floor: float
    kl_ratio: Optional[float] = None  # mean KL / mean floor: shown, not judged
    positions: int = 0
    verdict: Optional[Literal["pass", "drift", "fail"]] = None  # the KL tier alone, before fail_on_drift
    floor_source: Literal["phase", "overall"] = "phase"
    test: Optional[PairedTest] = None
    pooled: bool = False


class GatePhases(Part):
    prefill: GatePhase  # the first generated position, from the prompt's forward
    decode: GatePhase  # every later position, one cached decode step each
    note: Optional[str] = None  # why a phase fell back to the overall floor


class DequantizedModel(Part):
    """The point against HF transformers (fp32) running its artefact's own weights, dequantized
    (``harness.correctness.dequantized_model``): identical weights on another engine, so what is left is
    the engine's activation rounding (the floor) and kernel or runtime faults. Drift fails
    (``fail_on_drift``) where the floor models the engine's rounding (llama.cpp), and is reported where
    it is HF bf16 against fp32 (OpenVINO)."""

    verdict: Optional[Verdict] = None  # None when skipped
    reasons: list[str] = Field(default_factory=list)
    fail_on_drift: Optional[bool] = None  # None: records before the engine's rounding floor
    kl_mean: Optional[float] = None
    noise_floor: Optional[float] = None
    kl_ratio: Optional[float] = None
    phases: Optional[GatePhases] = None  # prefill and decode against their own floors
    top1_match_rate: Optional[float] = None
    engine: Optional[str] = None
    floor_method: Optional[str] = None
    created_at: Optional[str] = None  # when its reference was computed
    skipped: Optional[str] = None


class PositionBucket(Part):
    """The teacher-forced positions from ``start`` to ``end`` (``harness.correctness.positions``): their mean KL
    against the bucket's own noise floor (the overall one where the reference has none, ``floor_source``);
    ``verdict`` is the bucket's KL tier, None where it is not judged (too few positions, or one bucket)."""

    start: int
    end: int
    positions: int
    kl_mean: float
    noise_floor: float
    kl_ratio: float
    verdict: Optional[Literal["pass", "drift", "fail"]] = None
    floor_source: Literal["bucket", "overall"] = "bucket"


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


class SameWeights(Part):
    """A quantized point against its own weights on a trusted engine path (``harness.correctness.same_weights``):
    there the noise floor is that of identical weights, so drift is a bug, not quantization.
    ``model_verdict`` is the gate's verdict against the HF reference alone (the quantization cost);
    ``Correctness.verdict`` is the point's, both considered. ``skipped`` says why there is none."""

    verdict: Optional[Verdict] = None  # against its own weights; None when skipped
    model_verdict: Optional[Verdict] = None
    reasons: list[str] = Field(default_factory=list)
    mode: Optional[str] = None
    kl_mean: Optional[float] = None
    noise_floor: Optional[float] = None
    kl_ratio: Optional[float] = None
    top1_match_rate: Optional[float] = None
    free_divergence_index: Optional[int] = None
    engine: Optional[str] = None  # the trusted path
    weights: Optional[str] = None  # the file both sides run
    floor_method: Optional[str] = None
    created_at: Optional[str] = None  # when the same-weights reference was computed
    report: Optional[str] = None
    skipped: Optional[str] = None
    dequantized: Optional[DequantizedAudit] = None  # None: the twin has no weights reader (or records before it)
    dequantized_model: Optional[DequantizedModel] = None  # None: no weights reader (or records before it)


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
