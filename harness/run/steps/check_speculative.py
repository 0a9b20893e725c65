"""A speculative point's gate, after the usual gate on the same loaded engine: every gate prompt generated to
the gate's full token budget with speculation and without (``Adapter.generate_plain``), compared token by
token (``harness.correctness.speculative``); a failure fails the point, its reason naming the first position
where the two differ and whether it follows a rejection."""

from __future__ import annotations

from typing import Optional

from harness.adapters.base import Adapter
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import FAIL, NOT_JUDGED
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


def check_speculative(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, reference, correctness: Optional[Correctness]
) -> Contribution:
    from harness.correctness import speculative

    point = resolved.point
    if point.speculative == "none" or correctness is None or reference is None:
        return Contribution()
    budget = int(reference.settings["tokens"])
    k = resolved.scenario.gate.k
    precision = getattr(adapter.describe(), "precision", None) or resolved.settings.dtype
    prompts, counted = [], True
    for index, prompt in enumerate(reference.prompts):
        ctx.on_phase(f"{point.id}: speculative gate prompt {index + 1}/{len(reference.prompts)}")
        ids = list(prompt.prompt_ids)
        drafted = adapter.generate([ids], budget)
        plain = adapter.generate_plain([ids], budget)

        def gap_at(position: int, plain_token: int, speculative_token: int, ids=ids, plain=plain):
            if not adapter.supports_logits:
                return None
            logits = adapter.prefill(ids + list(plain.output_ids[0][:position]))
            return float(logits[plain_token] - logits[speculative_token]), float(logits.max())

        counted = counted and drafted.speculation is not None
        prompts.append(
            speculative.compare(
                index, drafted.output_ids[0], plain.output_ids[0], drafted.speculation, gap_at, precision, prompt, k
            )
        )
    part = speculative.conclude(point.speculative, prompts, adapter.runs_quantized(point), k, counted)
    update: dict = {"speculative": part}
    if part.reasons:
        unjudged = correctness.verdict == NOT_JUDGED
        update["verdict"] = FAIL
        update["reasons"] = [*([] if unjudged else correctness.reasons), *part.reasons]
        update["report"] = "\n".join(filter(None, [correctness.report, *part.reasons]))
    return Contribution(updates={"correctness": correctness.model_copy(update=update)})
