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
    # The path the device's states were taken on (cache kind, prefill chunks), as the gate ran it; where the
    # engine cannot take them there, what it took them on instead (one forward without cache)
    path: Optional[str] = None
    chunk: Optional[int] = None  # the first prefill chunk (from 1) where ``departs_at`` departs, of ``chunks``
    chunks: Optional[int] = None  # the forwards the prefill ran (its chunks); None: one
    ran: Optional[int] = None  # positions the prefill ran where more than the prompt's (padding)
    prompt: Optional[int] = None  # gate prompt index the tokens come from
    position: Optional[int] = None  # generated position the gate failed first at
    components: list[Component] = Field(default_factory=list)
    departs_at: Optional[str] = None  # the first component whose error jumps, or "input ids"; None when none does
    not_run: Optional[str] = None  # why no comparison could be made
    input_ids: Optional[InputIds] = None  # compared first: "input ids" departs when they differ
    # The checks beside the gate that failed (text path: tokenizer, chat_template, free_text, batch; stopping),
    # named where the gate's layers cannot see the fault
    failed_checks: list[str] = Field(default_factory=list)

    def where(self) -> str:
        """Where it departs, in words: e.g. ``decoder layer 0 (prefill on static cache (96), prefill chunks of
        4: chunk 2 of 3; prompt 0)``."""
        detail = ", ".join(filter(None, [self.path, f"padded to {self.ran} positions" if self.ran else None]))
        phase = " on ".join(filter(None, [self.phase, detail]))
        if self.chunk is not None:
            phase += f": chunk {self.chunk} of {self.chunks}"
        prompt = f"prompt {self.prompt}" if self.prompt is not None else None
        return f"{self.departs_at} ({'; '.join(filter(None, [phase, prompt]))})"
