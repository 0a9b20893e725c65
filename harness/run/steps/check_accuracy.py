"""Task accuracy (a step of a point's first launch): the point's lm-eval scores and per-document outcomes, and
with a stored HF reference the paired verdict against it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from harness.adapters.base import Adapter
from harness.adapters.trace import now_ns
from harness.errors import Unsupported
from harness.records.accuracy import Accuracy
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint

if TYPE_CHECKING:
    from harness.accuracy.reference_scores import Reference


def accuracy_reference(ctx: LaunchContext, scenario, model) -> Optional[Reference]:
    spec = scenario.accuracy
    if spec is None or not spec.reference or not ctx.timing:
        return None
    from harness.accuracy import evaluate
    from harness.accuracy.reference_scores import reference

    if evaluate.unavailable():
        return None
    dtype = scenario.gate.reference_dtype if scenario.gate else "bf16"
    key = (model.name, model.checksum, tuple(spec.tasks), spec.limit, spec.num_fewshot, dtype)
    refresh = ctx.settings.refresh_reference and key not in ctx.caches.refreshed  # once per process, not per point
    ctx.caches.refreshed.add(key)
    return reference(
        model,
        spec.tasks,
        spec.limit,
        spec.num_fewshot,
        dtype,
        scenario.measurement.threads,
        ctx.settings.reference_store,
        log=ctx.log,
        refresh=refresh,
    )


def check_accuracy(
    resolved: ResolvedPoint, adapter: Adapter, reference: Optional[Reference], point_id: str
) -> Contribution:
    """The point's task scores and per-document outcomes; with ``reference`` (``harness.accuracy.reference_scores.Reference``)
    the delta, its paired test and interval, and the non-inferiority verdict."""
    from harness.accuracy.evaluate import evaluate as evaluate_tasks
    from harness.accuracy.evaluate import unavailable
    from harness.correctness.reference import eos_ids

    spec = resolved.scenario.accuracy
    reason = unavailable()
    if reason:  # timing and the gate still stand; the record says why accuracy is missing
        return Contribution(updates={"accuracy": Accuracy(skipped=reason)})
    from harness.accuracy.lm_eval_model import HarnessLM

    model, tokenizer = resolved.model, resolved.tokenizer
    start = now_ns()
    lm = HarnessLM.from_adapter(adapter, tokenizer, eos_ids(model, tokenizer), model.engine_name(point_id))
    try:
        scores, outcomes = evaluate_tasks(lm, spec.tasks, spec.limit, spec.num_fewshot)
    except Unsupported as exc:  # an engine with neither logits nor generation to score
        return Contribution(updates={"accuracy": Accuracy(skipped=str(exc))})
    part = Accuracy(tasks=scores, outcomes=outcomes, limit=spec.limit, num_fewshot=spec.num_fewshot)
    if reference is not None:
        from harness.accuracy.paired import compare
        from harness.accuracy.reference_scores import delta

        found = compare(
            scores, outcomes, reference.scores, reference.outcomes, reference.why_unpaired, spec.non_inferiority
        )
        part = part.model_copy(
            update={
                "reference": reference.scores,
                "delta": delta(scores, reference.scores),
                "reference_outcomes": reference.outcomes,
                "paired": found.paired or None,
                "unpaired": found.unpaired or None,
                "verdict": found.verdict,
            }
        )
    return Contribution(metrics={"accuracy_s": (now_ns() - start) / 1e9}, updates={"accuracy": part})
