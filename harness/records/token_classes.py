"""Record part of the gate's per-token-class statistics and flip rate (``harness.correctness.class_check``):
every teacher-forced position is put in the class of the token it predicts (``harness.correctness.token_classes``),
and each class's KL is judged against its own noise floor, so a fault that only hits digits (or only special
tokens, or only punctuation) shows instead of averaging away among the other positions."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from harness.records.base import Part


class ClassStat(Part):
    """One token class's teacher-forced positions: their mean KL against the mean of the reference's noise floor
    at the same positions, top-1 agreement, and flips (top-1 changed where the reference's top-1 led its
    second by more than the tie margin). ``verdict`` is the class's KL tier, None where not judged (fewer
    positions than ``ClassCheck.min_positions``, or a single class)."""

    name: str
    positions: int
    kl_mean: float
    noise_floor: float
    kl_ratio: float
    top1_agreement: float
    decided: int  # positions whose reference top-1 leads its second by more than the tie margin
    flips: int  # of those, positions where the engine's top-1 is another token
    verdict: Optional[Literal["pass", "drift", "fail"]] = None


class FlipRate(Part):
    """The share of decided positions (reference top-1 margin over its second above ``tie_margin`` nats) whose
    top-1 the engine changed. ``verdict`` drift above ``line`` (reported: it changes no point's verdict), None when
    fewer than the gate's ``min_positions`` were decided."""

    rate: Optional[float] = None
    flips: int = 0
    decided: int = 0
    positions: int = 0
    tie_margin: float
    line: float
    verdict: Optional[Literal["pass", "drift"]] = None
    # The rate to expect of an engine at the point's KL floor (harness.correctness.expected_flips), over the
    # same decided positions; reported beside ``rate``, no verdict. None: no decided position, or older records.
    expected_rate: Optional[float] = None
    expected_method: Optional[str] = None


class ClassCheck(Part):
    """Per-token-class KL and top-1 agreement, and the flip rate, over every teacher-forced position."""

    classes: list[ClassStat] = Field(default_factory=list)
    flips: Optional[FlipRate] = None
    min_positions: int = 0  # a class with fewer positions is shown, not judged
    method: str = ""  # how positions were classified
    reasons: list[str] = Field(default_factory=list)  # the class tiers and flip rate that failed or drifted
    skipped: Optional[str] = None

    def summary(self) -> str:
        if self.skipped:
            return "skipped"
        verdicts = {c.verdict for c in self.classes} | {self.flips.verdict if self.flips else None}
        word = next((v for v in ("fail", "drift") if v in verdicts), "pass")
        worst = max((c for c in self.classes if c.verdict), key=lambda c: c.kl_ratio, default=None)
        shown = f"worst {worst.name} {worst.kl_ratio:.1f}x its floor ({worst.positions})" if worst else "none judged"
        flips = self.flips
        rate = f", flips {flips.rate:.1%} of {flips.decided}" if flips and flips.rate is not None else ""
        if rate and flips is not None and flips.expected_rate is not None:
            rate += f" (expected at the floor {flips.expected_rate:.1%})"
        return f"{word} ({shown}{rate})"
