"""``gate.power``: widen the gate's prompt set until its KL test detects the target rise with 80 % power.

The detectable rise (``harness.correctness.power``) shrinks as the positions grow, so from the spread the
point showed, the prompts needed follow (n x (ln(detectable / drift) / ln(target / drift))^2); prompts are
taken from the shipped set in its fixed order (``select_gate_prompts(n)`` extends ``"ci"``), the reference
for them computed once and stored like any other, and the gate run again, up to ``ROUNDS`` times. A
target at or below ``drift_factor``, a custom prompt list, or the shipped set exhausted: it says so.
"""

from __future__ import annotations

import math
from typing import Callable

from harness.correctness import power
from harness.models import prompts
from harness.records.record import GatePower

ROUNDS = 3


def widen(spec, result, reference, selection, rerun: Callable) -> tuple[object, object, GatePower]:
    """(gate result, reference, GatePower): ``rerun(selection)`` returns (result, reference) for a wider set."""
    shipped = len(prompts.select_gate_prompts("all"))
    for round_ in range(ROUNDS + 1):
        test = result.test
        if test is None:
            return result, reference, GatePower(target=spec.power, prompts=len(reference.prompts), why="no KL test ran")
        have = len(reference.prompts)
        found = GatePower(target=spec.power, detectable=test.detectable, prompts=have)
        factor = power.positions_needed(test.detectable, spec.drift_factor, spec.power)
        if factor is None:
            why = f"a target at or below drift_factor ({spec.drift_factor:g}x) is never detectable"
            return result, reference, found.model_copy(update={"why": why})
        if factor <= 1:
            return result, reference, found.model_copy(update={"reached": True})
        if isinstance(selection, list):
            return result, reference, found.model_copy(update={"why": "a custom prompt list is not widened"})
        if have >= shipped:
            why = f"the shipped set's {shipped} prompts detect {test.detectable:.1f}x, not {spec.power:g}x"
            return result, reference, found.model_copy(update={"why": why})
        if round_ == ROUNDS:
            break
        selection = min(shipped, max(have + 1, math.ceil(have * factor)))
        wider, wider_reference = rerun(selection)
        if getattr(wider, "test", None) is None:  # the wider set could not be gated here (gate.NotRun)
            why = f"{selection} prompts could not be gated: {getattr(wider, 'why', 'no KL test ran')}"
            return result, reference, found.model_copy(update={"why": why})
        result, reference = wider, wider_reference
    return result, reference, found.model_copy(update={"why": f"not reached in {ROUNDS} widenings"})
