"""The gate's typed results (its settings, each prompt's comparison, the verdict) and the readable failure
table; the checks that produce them live in ``harness.correctness.gate``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Optional

from harness.correctness import kl as kl_stats
from harness.correctness import positions
from harness.correctness.lengths import is_long
from harness.records.correctness import (
    DRIFT,
    FAIL,
    NOT_JUDGED,
    PASS,
    GatePhases,
    KLDistribution,
    PairedTest,
    PositionBucket,
)

if TYPE_CHECKING:
    from harness.correctness.reference import Reference


@dataclass(frozen=True)
class GateConfig:
    k: int = 5
    mode: str = "both"  # free | forced | both
    drift_factor: float = 5.0
    fail_factor: float = 100.0
    fail_on_drift: bool = True  # the runner sets False for quantized points, where drift is expected
    min_positions: int = 8  # no KL tier (overall or per phase) is judged on fewer teacher-forced positions

    @property
    def lines(self) -> kl_stats.Lines:
        return kl_stats.Lines(self.drift_factor, self.fail_factor, self.fail_on_drift, self.min_positions)


@dataclass
class Divergence:
    """Where two greedy sequences part, with both sides' top-k at that position."""

    prompt: int
    position: int
    reference_token: Optional[int]
    device_token: Optional[int]
    reference_topk: list[tuple[int, float]]
    device_topk: list[tuple[int, float]]
    ok: bool
    why: str = ""


@dataclass
class PromptResult:
    prompt: int
    kind: str
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
    failures: list[Divergence] = field(default_factory=list)
    # Teacher-forced, per generated position (for the report's KL plot and ``harness export``):
    # KL(reference || device) to 4 significant digits (None in top-1 mode), and 1/0 top-1 agreement.
    position_kl: Optional[list[float]] = None
    position_top1: Optional[list[int]] = None
    position_kl_reverse: Optional[list[float]] = None  # KL(device || reference), same partition and digits
    prefill_kl: Optional[list[float]] = None  # KL at the prompt's prefill positions (harness.correctness.prefill)
    prefill_ok: Optional[bool] = None  # the two-way top-k check at those positions (None: not run)
    prefill_violations: int = 0

    def violated(self, divergence: Divergence) -> None:
        """Count a teacher-forced top-k violation; the first one is kept with its details."""
        self.forced_violations += 1
        if self.forced_first_violation is None:
            self.forced_first_violation = divergence.position
            self.failures.append(divergence)


@dataclass
class GateResult:
    verdict: str  # pass | drift | fail | not judged (harness.records.correctness.VERDICTS)
    reasons: list[str]
    k: int
    mode: str
    kl_mean: Optional[float]
    noise_floor: float
    kl_ratio: Optional[float]
    top1_match_rate: Optional[float]
    free_divergence_index: Optional[int]  # earliest over prompts
    prompts: list[PromptResult]
    reference: dict = field(default_factory=dict)
    phases: Optional[GatePhases] = None  # the KL tier per phase (None in top-1 mode)
    distribution: Optional[KLDistribution] = None
    buckets: Optional[list[PositionBucket]] = None  # KL by position (harness.correctness.positions)
    test: Optional[PairedTest] = None  # the overall KL tier's paired test (None in top-1 mode, too few positions)
    min_positions: Optional[int] = None
    notes: list[str] = field(default_factory=list)  # what was not judged, and why

    def to_dict(self) -> dict:
        parts = (("phases", self.phases), ("distribution", self.distribution), ("test", self.test))
        return (
            asdict(self)
            | {name: part.model_dump() if part is not None else None for name, part in parts}
            | {"buckets": [b.model_dump() for b in self.buckets] if self.buckets is not None else None}
        )


def decide(fails: list[str], drifts: list[str], unjudged: Optional[str], fail_on_drift: bool) -> tuple[str, list[str]]:
    """(verdict, reasons) from the checks' fail and drift reasons and why the KL tier was not judged (or
    None): a failure fails; drift drifts (fails with ``fail_on_drift``); top-k checks passed with no KL
    tier judged are ``not judged``, never a silent pass."""
    if fails:
        return FAIL, fails
    if drifts:
        return (FAIL, [*drifts[:-1], drifts[-1] + "; drift fails this point"]) if fail_on_drift else (DRIFT, drifts)
    if unjudged:
        return NOT_JUDGED, [unjudged]
    return PASS, []


@dataclass(frozen=True)
class NotRun:
    why: str  # what the loaded point's engine lacks


def format_failures(result: GateResult, reference: Reference, tokenizer) -> str:
    """A readable table: prompt, position, both tokens as text and id, both top-k with log-probs."""

    def show(token_id: Optional[int]) -> str:
        return "-" if token_id is None else f"{tokenizer.decode([token_id])!r}({token_id})"

    lines = [f"gate {result.verdict.upper()}: " + "; ".join(result.reasons)]
    if result.buckets:
        lines.append(positions.describe(result.buckets))
    for prompt in result.prompts:
        seen = set()
        for d in prompt.failures:
            key = (d.position, d.reference_token, d.device_token)
            if key in seen:  # free-running and teacher-forced often fail at the same first position
                continue
            seen.add(key)
            text = reference.prompts[d.prompt].text
            where = f"position {d.position}"
            if is_long(prompt.kind):  # teacher-forced from its head: where that is in the sequence
                where += f" (sequence position {len(reference.prompts[d.prompt].prompt_ids) + d.position})"
            lines.append(f"  prompt {d.prompt} ({prompt.kind}) {text[:50]!r}, {where}: {d.why}")
            lines.append(f"    reference {show(d.reference_token):<24} device {show(d.device_token)}")
            lines.append("    reference top-k: " + ", ".join(f"{show(i)} {lp:.2f}" for i, lp in d.reference_topk))
            if d.device_topk:
                lines.append("    device    top-k: " + ", ".join(f"{show(i)} {lp:.2f}" for i, lp in d.device_topk))
    return "\n".join(lines)
