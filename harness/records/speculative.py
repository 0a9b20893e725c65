"""Record part of a speculative point's gate (``harness.correctness.speculative``): greedy equality with the
engine's own plain greedy run, prompt by prompt, and the speculative outputs against the HF reference."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from harness.records.base import Part


class PromptEquality(Part):
    """One gate prompt's speculative and plain greedy outputs, over the gate's whole token budget."""

    prompt: int
    tokens: int  # positions compared
    position: Optional[int] = None  # the first position where the two differ; None: equal throughout
    speculative_token: Optional[int] = None
    plain_token: Optional[int] = None
    verify_step: Optional[int] = None  # the target forward that emitted the differing token (0: the prefill)
    after_rejection: Optional[str] = None  # "step 3 rejected 4 of 5 candidates" where the previous step rejected any
    tie_gap: Optional[float] = None  # the plain engine's logit gap between the two tokens, when within its rounding
    reference_position: Optional[int] = None  # where the speculative output first leaves the HF reference's tokens
    reference_ok: Optional[bool] = None  # None: no reference position to judge; else the token is in its top-k
    drafted: int = 0
    accepted: int = 0


class SpeculativeGate(Part):
    verdict: str  # pass | fail
    value: str  # the point's speculative value
    margin: str  # how a tie within the engine's rounding is decided
    prompts: list[PromptEquality] = Field(default_factory=list)
    ties: list[str] = Field(default_factory=list)  # differences named as ties, not failures
    reasons: list[str] = Field(default_factory=list)  # why it failed
    notes: list[str] = Field(default_factory=list)
