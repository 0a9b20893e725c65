"""The record's part for a point's artefact read back against the HF checkpoint (``harness.correctness.dequantized``)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from harness.records.base import Part
from harness.records.weight_bias import WeightBias


class DequantizedAudit(Part):
    """The point's artefact read back and dequantized, row by row against the HF checkpoint
    (``harness.correctness.dequantized``): a converter that wrote other weights fails here even when the
    device path and its twin agree. ``ratio``: the worst row's relative error over its storage format's
    median row error; ``fail`` above ``fail_factor``."""

    verdict: Optional[Literal["pass", "fail"]] = None
    ratio: Optional[float] = None
    fail_factor: Optional[float] = None
    worst: Optional[str] = None  # "<hf name> row <i> (<format>, stored as <name>)"
    worst_error: Optional[float] = None
    floors: dict[str, float] = Field(default_factory=dict)  # per storage format
    tensors: Optional[int] = None
    method: Optional[str] = None
    reasons: list[str] = Field(default_factory=list)
    skipped: Optional[str] = None
    bias: Optional[WeightBias] = None  # the sign test (``harness.correctness.weight_bias``); None before it
