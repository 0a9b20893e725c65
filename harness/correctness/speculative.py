"""The speculative gate: lossless speculation under greedy decoding must emit exactly the tokens plain greedy
decoding emits on the same engine. A broken verify step (accepting a candidate the target rejected), a KV
cache not rolled back after a rejection, or candidates fed at the wrong positions shows as a difference the
plain path does not have; a draft that merely guesses badly shows only as a low acceptance rate.

Pure functions: ``compare`` judges one prompt from the two outputs, the speculative run's verify steps, the
plain engine's logits at the first difference (for ties) and the HF reference; ``conclude`` the point.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from harness.adapters.speculation import VerifySteps
from harness.correctness.stored_reference import PromptReference
from harness.correctness.ties import within as within_tie_margin  # the gate's top-k tie margin
from harness.records.speculative import PromptEquality, SpeculativeGate

# Unit round-off of the precision the engine computes logits in: two tokens whose logits lie within a few
# of these (relative to the largest logit) may swap places between a one-token forward and a verify forward
# over several tokens, whose kernels round differently. Quantized engines compute in f32 with rounded inputs.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "f32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11, "f16": 2.0**-11}
ROUNDOFFS_PER_TIE = 4
MARGIN = (
    f"a tie: the plain engine's logits of the two tokens differ by at most {ROUNDOFFS_PER_TIE} unit round-offs of "
    "its compute precision times the largest logit (bf16 2^-8, fp16 2^-11, fp32 2^-24; others as bf16)"
)


def tie_margin(top_logit: float, precision: str) -> float:
    return ROUNDOFFS_PER_TIE * UNIT_ROUNDOFF.get(precision, UNIT_ROUNDOFF["bf16"]) * max(1.0, abs(top_logit))


def first_difference(speculative: Sequence[int], plain: Sequence[int]) -> Optional[int]:
    """The first position where the outputs differ (a shorter output differs where it ends), or None."""
    for position, (a, b) in enumerate(zip(speculative, plain)):
        if a != b:
            return position
    return None if len(speculative) == len(plain) else min(len(speculative), len(plain))


def compare(
    prompt: int,
    speculative: Sequence[int],
    plain: Sequence[int],
    steps: Optional[VerifySteps],
    gap_at: Callable[[int, int, int], Optional[tuple[float, float]]],
    precision: str,
    reference: Optional[PromptReference],
    k: int,
) -> PromptEquality:
    """One prompt. ``gap_at(position, plain_token, speculative_token)``: the plain engine's (logit gap between
    the two tokens, largest logit) at ``position`` given the common prefix, or None where it has no logits."""
    steps = steps or VerifySteps()
    result = PromptEquality(
        prompt=prompt,
        tokens=max(len(speculative), len(plain)),
        drafted=sum(steps.drafted),
        accepted=sum(steps.accepted),
    )
    position = first_difference(speculative, plain)
    if position is not None:
        result.position = position
        result.speculative_token = speculative[position] if position < len(speculative) else None
        result.plain_token = plain[position] if position < len(plain) else None
        result.verify_step = steps.step_of(position)
        rejected = steps.rejected_before(position)
        if rejected is not None:
            step, count, drafted = rejected
            distance = (result.verify_step or 0) - step
            later = "the forward before" if distance == 1 else f"{distance} forwards before"
            result.after_rejection = f"step {step} rejected {count} of {drafted} candidates, {later}"
        if result.speculative_token is not None and result.plain_token is not None:
            found = gap_at(position, result.plain_token, result.speculative_token)
            if found is not None and abs(found[0]) <= tie_margin(found[1], precision):
                result.tie_gap = found[0]
    if reference is not None:
        where = first_difference(speculative[: len(reference.tokens)], reference.tokens[: len(speculative)])
        if where is not None and where < min(len(speculative), len(reference.tokens)):
            result.reference_position = where
            result.reference_ok = within_tie_margin(
                reference.top_ids[where], reference.top_logprobs[where], speculative[where], k
            )
        else:
            result.reference_ok = True
    return result


def describe(result: PromptEquality) -> str:
    """A difference in one line: where, which tokens, which verify step and whether it follows a rejection."""
    step = f"verify step {result.verify_step}" if result.verify_step is not None else "an uncounted step"
    rejection = f"after a rejection ({result.after_rejection})" if result.after_rejection else "not after a rejection"
    return (
        f"prompt {result.prompt}: speculative and plain greedy differ first at position {result.position} "
        f"(speculative {result.speculative_token}, plain {result.plain_token}), emitted by {step}, {rejection}"
    )


def conclude(
    value: str, prompts: list[PromptEquality], quantized: bool, k: int, counted: bool = True
) -> SpeculativeGate:
    """The point's speculative verdict: fail on any difference from plain greedy that is not a tie within the
    engine's rounding, and on a speculative output outside the HF reference's top-k (only a note where the
    point runs quantized weights, which may drift from the reference)."""
    reasons: list[str] = []
    ties: list[str] = []
    notes: list[str] = []
    for result in prompts:
        if result.position is not None:
            if result.tie_gap is not None:
                ties.append(f"{describe(result)}: a tie (logit gap {result.tie_gap:.3g}) within the engine's rounding")
            else:
                reasons.append(describe(result))
        if result.reference_ok is False:
            line = (
                f"prompt {result.prompt}: the speculative output leaves the HF reference at position "
                f"{result.reference_position} with a token outside its top-{k}"
            )
            (notes if quantized else reasons).append(line)
    if not counted:
        notes.append("the engine exposed no verify steps: equality holds whatever was drafted, steps are not named")
    elif sum(r.drafted for r in prompts) == 0:
        notes.append("no candidate was drafted on any gate prompt: equality shows nothing about the verify step")
    return SpeculativeGate(
        verdict="fail" if reasons else "pass",
        value=value,
        margin=MARGIN,
        prompts=prompts,
        ties=ties,
        reasons=reasons,
        notes=notes,
    )
