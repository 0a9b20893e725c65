"""Record part of the stopping check (``harness.correctness.stopping``): each gate prompt run through the engine's
own stopping (``Adapter.generate_until_stop``), its length and stop against the reference's; ``unended``, the
shipped stop prompts not run because their reference does not end within the budget. ``verdict`` (pass | fail),
or ``skipped`` with why it could not run."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from harness.records.base import Part


class StopPrompt(Part):
    source: Literal["gate", "stop"]  # the gate's own prompts, or the shipped stop prompts
    prompt: int  # index among its source's prompts
    reference_tokens: int  # generated before the reference's stop (or its whole budget)
    reference_stops: bool  # the reference ended (EOS / end of turn) inside the budget
    device_tokens: int  # generated before the engine stopped (its final stop token not counted)
    device_stops: bool  # the engine ended by itself (on a stop token, or short of the budget)
    why: Optional[str] = None  # why this prompt fails


class StopCheck(Part):
    verdict: Optional[Literal["pass", "fail"]] = None
    skipped: Optional[str] = None
    budget: int = 0  # new tokens at most, the gate's ``tokens``
    stopping: int = 0  # prompts whose reference stops within half the budget: the early-stop cases judged
    length_band: Optional[tuple[float, float, int]] = None
    prompts: list[StopPrompt] = Field(default_factory=list)
    # Stop prompts (indices) whose reference does not end within the budget: not run through the engine, not
    # judged (only "did not stop early" could be, which the gate's prompts judge); empty in older records.
    unended: list[int] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        if self.skipped:
            return "skipped"
        found = f"{self.verdict} ({self.stopping} of {len(self.prompts)} prompts stop early"
        if self.unended:
            found += (
                f"; {len(self.unended)} stop prompts not run: their reference does not end within {self.budget} tokens"
            )
        return found + ")"
