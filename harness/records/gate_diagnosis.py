"""The record part that says where a failed gate's device first departs from HF (``harness.correctness.diagnosis``
computes it): each component's agreement in forward order, and the engine's own input ids against the
reference's. Informational: it never changes a verdict."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from harness.records.base import Part


class Component(Part):
    name: str  # embedding | decoder layer N | final norm | logits
    cosine: float
    relative_error: float  # ||device - hf|| / ||hf|| over the compared positions
    max_abs: float


class InputIds(Part):
    """The engine's own ids for a gate prompt against the reference's (what the gate fed it)."""

    prompt: int
    agree: Optional[bool] = None  # None: not compared (``not_compared`` says why)
    first_difference: Optional[int] = None
    engine: Optional[list[int]] = None  # both sides, only where they differ
    reference: Optional[list[int]] = None
    not_compared: Optional[str] = None


class Diagnosis(Part):
    phase: Optional[str] = None  # prefill | decode
    prompt: Optional[int] = None  # gate prompt index the tokens come from
    position: Optional[int] = None  # generated position the gate failed first at
    components: list[Component] = Field(default_factory=list)
    departs_at: Optional[str] = None  # the first component whose error jumps, or "input ids"; None when none does
    not_run: Optional[str] = None  # why no comparison could be made
    input_ids: Optional[InputIds] = None  # compared first: "input ids" departs when they differ
