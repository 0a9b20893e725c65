"""``gate.power``: widen the gate's prompt set until its KL test detects the target rise with 80 % power.

The detectable rise (``harness.correctness.paired_kl``) shrinks as the positions grow, so from the spread the
point showed, the prompts needed follow (n x (ln(detectable / drift) / ln(target / drift))^2); prompts are
taken from the shipped set in its fixed order (``select_gate_prompts(n)`` extends ``"ci"``), the reference
for them computed once and stored like any other, and the gate run again, up to ``ROUNDS`` times. A
target at or below ``drift_factor``, a custom prompt list, or the shipped set exhausted: it says so.

The KL test needs ``gate.min_positions`` teacher-forced positions first (below them the point is ``not
judged``): the same widening adds prompts until they are reached (n x min_positions / positions), then
goes on to the target. Only with ``gate.power`` set: without it the prompts are the scenario's, as asked.
"""

from __future__ import annotations

import math
from typing import Callable

from harness.correctness import paired_kl
from harness.correctness.lengths import on_own_text
from harness.models import prompts
from harness.records.correctness import GatePower

ROUNDS = 3


def forced_positions(result) -> int:
    """Teacher-forced positions the KL tier had (0 in top-1 mode or without teacher forcing)."""
    return sum(len(p.position_kl or []) for p in getattr(result, "prompts", []))


def widen(spec, result, reference, selection, rerun: Callable) -> tuple[object, object, GatePower]:
    """(gate result, reference, GatePower): ``rerun(selection)`` returns (result, reference) for a wider set."""
    shipped = len(prompts.select_gate_prompts("all"))
    for round_ in range(ROUNDS + 1):
        test = result.test
        positions = forced_positions(result)
        found = GatePower(
            target=spec.power,
            detectable=test.detectable if test is not None else None,
            prompts=len(reference.prompts),
            positions=positions,
        )
        if not positions:
            return result, reference, found.model_copy(update={"why": "no KL test ran"})
        have = sum(not on_own_text(p.kind) for p in reference.prompts)  # the selection counts the short prompts
        if test is None:  # fewer positions than gate.min_positions: reach them first
            short = f"{positions} teacher-forced positions, fewer than gate.min_positions={spec.min_positions}"
            wanted = math.ceil(have * spec.min_positions / positions)
        else:
            factor = paired_kl.positions_needed(test.detectable, spec.drift_factor, spec.power)
            if factor is None:
                why = f"a target at or below drift_factor ({spec.drift_factor:g}x) is never detectable"
                return result, reference, found.model_copy(update={"why": why})
            if factor <= 1:
                return result, reference, found.model_copy(update={"reached": True})
            short = f"the shipped set's {shipped} prompts detect {test.detectable:.1f}x, not {spec.power:g}x"
            wanted = math.ceil(have * factor)
        if isinstance(selection, list):
            return result, reference, found.model_copy(update={"why": "a custom prompt list is not widened"})
        if have >= shipped:
            why = short if test is not None else f"the shipped set's {shipped} prompts give {short}"
            return result, reference, found.model_copy(update={"why": why})
        if round_ == ROUNDS:
            break
        selection = min(shipped, max(have + 1, wanted))
        wider, wider_reference = rerun(selection)
        if not forced_positions(wider):  # the wider set could not be gated here (gate.NotRun)
            why = f"{selection} prompts could not be gated: {getattr(wider, 'why', 'no KL test ran')}"
            return result, reference, found.model_copy(update={"why": why})
        result, reference = wider, wider_reference
    return result, reference, found.model_copy(update={"why": f"not reached in {ROUNDS} widenings"})
