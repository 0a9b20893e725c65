"""Record part of the beam check (``harness.correctness.beams``): a point timed with ``beam_width`` > 1 has its
engine's best beam compared with the HF reference's beam search at the same width, ids, length penalty and
stopping, and the reference teacher-forced along the engine's best beam. ``verdict`` (pass | fail), or
``skipped`` with why it could not run."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from harness.records.base import Part


class BeamPrompt(Part):
    """One gate prompt's beams: the engine's best and the reference's best, and the reference along the engine's."""

    prompt: int
    identical: bool  # the engine's best beam is the reference's, token for token
    engine_tokens: list[int]
    reference_tokens: list[int]
    engine_score: float  # the engine's own score of its best beam (HF: log-probability sum / length ** penalty)
    reference_score: float  # the reference's score of its own best beam
    forced_score: float  # the reference's score of the engine's best beam, teacher-forced along it
    score_gap: float  # |engine_score - forced_score|: the engine's scores against the reference's, same tokens
    deficit: float  # reference_score - forced_score: how much worse the engine's beam is under the reference
    first_miss: Optional[int] = None  # first step whose engine token is outside the reference's top candidates
    kl_mean: Optional[float] = None  # KL(reference || engine's step-wise logits) along the engine's beam


class BeamCheck(Part):
    verdict: Optional[Literal["pass", "fail"]] = None
    skipped: Optional[str] = None
    width: int = 1
    length_penalty: Optional[float] = None
    tokens: int = 0  # new tokens per beam, as timed (EOS does not end a beam)
    candidates: int = 0  # the top candidates a beam's next token must be among (2 x width, as HF's beam search)
    line: float = 0.0  # score gap and deficit above this (nats per token at length penalty 1) fail
    worst: Optional[float] = None  # the largest score gap or deficit over the prompts
    margin: Optional[float] = None  # worst / line
    kl_ratio: Optional[float] = None  # mean KL along the engine's beams over the gate's noise floor (reported)
    prompts: list[BeamPrompt] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # prompts not run, and why (a static cache's size)

    def summary(self) -> str:
        if self.skipped:
            return "skipped"
        same = sum(p.identical for p in self.prompts)
        return (
            f"{self.verdict} ({same}/{len(self.prompts)} best beams identical, worst {self.worst:.3g} vs {self.line})"
        )
