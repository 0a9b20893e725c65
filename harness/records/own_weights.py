"""Record parts of the checks of a point against its own weights (``harness.correctness.same_weights``,
``.dequantized_model``): the same-weights check and, within it, the dequantized model on HF transformers."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from harness.records.base import Part
from harness.records.dequantized_audit import DequantizedAudit
from harness.records.gate_verdicts import Verdict
from harness.records.kl_tier import GatePhases


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
