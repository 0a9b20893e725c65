"""The stopping check (``harness.correctness.stopping``), after the gate on the same loaded engine: the gate's
short prompts and the shipped stop prompts through the engine's own stopping; the stop prompts' reference is
computed once and stored like the gate's. ``correctness.stopping`` records it, and a failed check fails the point."""

from __future__ import annotations

from typing import Optional

from harness.adapters.base import Adapter
from harness.correctness.own_stopping import OwnStopping
from harness.records.correctness import Correctness
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


def stop_settings(reference):
    """The stop prompts' reference settings: the gate reference's (``reference``) without long prompts, and
    without the noise floor and prefill positions, which the stopping check never reads (its greedy tokens and
    their top-M are all it judges by): one engine load and one greedy pass per prompt, no fp32 pass."""
    from dataclasses import replace

    from harness.correctness.reference import ReferenceSettings

    fields = ReferenceSettings.__dataclass_fields__
    gate = ReferenceSettings(**{k: v for k, v in reference.settings.items() if k in fields})
    return replace(gate, length=None, floor_dtype=None, prefill_positions=0)


def stop_reference(ctx: LaunchContext, resolved: ResolvedPoint, reference):
    """The shipped stop prompts' reference (``stop_settings``)."""
    from harness.correctness.reference import ReferenceStore
    from harness.models import prompts

    pairs = prompts.stop_prompts()
    settings = stop_settings(reference)
    store = ReferenceStore(ctx.settings.reference_store)
    path = store.path_for(resolved.model, pairs, settings)

    def compute():
        found, path, reused = store.get_or_compute(
            resolved.model, pairs, settings, refresh=ctx.settings.refresh_reference
        )
        ctx.log(f"stop prompts' reference: {'reused' if reused else 'computed, stored at'} {path}")
        return found

    return ctx.caches.reference(path, compute)


def check_stopping(
    ctx: LaunchContext,
    resolved: ResolvedPoint,
    adapter: Adapter,
    reference,
    correctness: Optional[Correctness],
    own: Optional[OwnStopping] = None,
) -> Contribution:
    """``own``: the launch's generations through the engine's own stopping, shared with the text path."""
    from harness.correctness import stopping

    if correctness is None or reference is None or correctness.skipped:
        return Contribution()
    point, spec = resolved.point, resolved.scenario.gate
    if adapter.supports_stopping:
        ctx.on_phase(f"{point.id}: stopping")
        stops = stop_reference(ctx, resolved, reference)
        found = stopping.check(
            adapter,
            reference.prompts,
            stops.prompts,
            reference.settings["eos_ids"],
            reference.settings["tokens"],
            spec.k,
            own,
        )
    else:
        found = stopping.check(adapter, [], [], [], 0, spec.k)
    update: dict = {"stopping": found}
    failed = stopping.reasons(found)
    if failed:
        update["verdict"] = "fail"
        update["reasons"] = [*correctness.reasons, *failed]
        update["report"] = "\n".join(filter(None, [correctness.report, *failed]))
        from harness.correctness import check_diagnosis, text_path
        from harness.models import prompts

        engine_ids = text_path.input_ids_of(adapter, reference, prompts.chat_template(resolved.model.hf_dir))
        found, line = check_diagnosis.of_failed_checks(correctness.diagnosis, ["stopping"], engine_ids, reference)
        update["diagnosis"] = found
        if line:
            update["report"] += f"\n{line}"
    return Contribution(updates={"correctness": correctness.model_copy(update=update)})
