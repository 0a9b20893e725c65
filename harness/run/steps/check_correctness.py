"""The correctness step of a point's first launch: the top-k agreement gate against the stored HF reference,
with diagnosis where it fails (``harness verify`` runs this step alone)."""

from __future__ import annotations

from harness.adapters.base import Adapter
from harness.adapters.trace import now_ns
from harness.correctness.outcome import NotRun, format_failures
from harness.models import prompts
from harness.records.correctness import Correctness, GatePath, ReferenceInfo
from harness.records.gate_verdicts import DRIFT, FAIL
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


def gate_selection(ctx: LaunchContext, spec):
    """The gate's prompt selection: ``--prompts`` where given, else the scenario's."""
    chosen = ctx.settings.gate_prompts
    return chosen if chosen is not None else spec.prompts


def gate_reference(ctx: LaunchContext, scenario, model, point=None, selection=None):
    """The point's stored HF reference (computed once per model, prompt set, settings and gate length), or
    None. ``point`` None: the short prompts only. ``selection`` overrides the prompt selection (``gate.power``
    widening it)."""
    if scenario.gate is None:
        return None
    from harness.correctness import lengths
    from harness.correctness.reference import ReferenceSettings, ReferenceStore

    spec = scenario.gate
    pairs = prompts.select_gate_prompts(gate_selection(ctx, spec) if selection is None else selection)
    plan = (
        lengths.plan(
            spec.length,
            spec.long_prompts,
            point.prompt_len,
            point.max_seq_len,
            scenario.generation.max_new_tokens,
            model.hf_dir,
            chunk=point.moe_chunk_size,
            tokens=spec.tokens,
        )
        if point is not None
        else None
    )
    pairs = pairs + prompts.copy_prompts(spec.copy_prompts)
    if plan is not None:
        pairs = pairs + lengths.pairs(plan.count)
        ctx.log(f"gate length {plan.length} for {point.id}: {plan.why}")
    settings = ReferenceSettings(
        tokens=spec.tokens,
        top_m=max(64, spec.k),
        dtype=spec.reference_dtype,
        threads=scenario.measurement.threads,
        length=plan.length if plan is not None else None,
        prefill_positions=spec.prefill_positions,
    )
    store = ReferenceStore(ctx.settings.reference_store)

    def compute():
        from harness.errors import step

        with step(model.hf_dir, "HF reference (transformers)", once=True):  # a failure: not retried per point
            reference, path, reused = store.get_or_compute(
                model, pairs, settings, refresh=ctx.settings.refresh_reference
            )
        ctx.log(
            f"reference: reused {path}"
            if reused
            else f"reference: computed in {reference.compute_s:.1f} s, stored at {path}"
        )
        return reference

    return ctx.caches.reference(store.path_for(model, pairs, settings), compute)


def check_correctness(ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, reference) -> Contribution:
    from harness.correctness import gate

    spec = resolved.scenario.gate
    point = resolved.point
    settings = spec.settings(quantized=adapter.runs_quantized(point))
    start = now_ns()

    def run_gate(ref):
        return gate.run(adapter, ref, settings, on_prompt=lambda j, m: ctx.on_phase(f"{point.id}: gate prompt {j}/{m}"))

    result = run_gate(reference)
    if isinstance(result, NotRun):  # the engine exposes neither logits nor forced tokens here
        return Contribution(updates={"correctness": Correctness(skipped=result.why)})
    found_power = None
    if spec.power is not None:
        from harness.run.steps.gate_power import widen

        def rerun(selection):
            wider = gate_reference(ctx, resolved.scenario, resolved.model, point, selection)
            return run_gate(wider), wider

        result, reference, found_power = widen(spec, result, reference, gate_selection(ctx, spec), rerun)
    from harness.correctness import class_check

    result = class_check.apply(result, reference, resolved.tokenizer, settings)
    part = result.model_copy(
        update={
            "reference": ReferenceInfo(
                created_at=reference.created_at,
                versions=reference.versions,
                noise_floor=reference.noise_floor,
                prompts=len(reference.prompts),
                tokens=reference.settings["tokens"],
            ),
            "length": reference.settings.get("length"),
            "power": found_power,
            "path": _path(adapter, point, gate.CHECKS[result.mode]),
            "report": format_failures(result, reference, resolved.tokenizer) if result.reasons else "",
        }
    )
    if result.verdict in (FAIL, DRIFT):  # a KL tier not judged has no departure to look for
        found = diagnose(resolved, adapter, reference, result)
        part.diagnosis = found
        if found.departs_at is not None:
            part.report += f"\ndiagnosis: activations depart from HF at {found.where()}"
    return Contribution(metrics={"gate_s": (now_ns() - start) / 1e9}, updates={"correctness": part})


def _path(adapter: Adapter, point, checks: list[str]) -> GatePath:
    """Where the gate ran, with every difference from the timed configuration named in its notes."""
    from harness.correctness.beams import path_notes

    found = adapter.gate_path()
    return GatePath.model_validate(
        found | {"checks": checks, "notes": [*found.get("notes", []), *path_notes(point, adapter)]}
    )


def diagnose(resolved: ResolvedPoint, adapter: Adapter, reference, result):
    """Where the device first departs from HF (in the reference dtype), on the prompt the gate failed first."""
    from harness.correctness.diagnosis import diagnose_failure
    from harness.correctness.reference import hf_engine
    from harness.correctness.text_path import input_ids_of

    engine_ids = input_ids_of(adapter, reference, prompts.chat_template(resolved.model.hf_dir))
    if not adapter.supports_hidden_states:  # no HF engine to load for nothing
        return diagnose_failure(adapter, None, reference, result, engine_ids)
    scenario = resolved.scenario
    with hf_engine(resolved.model, scenario.gate.reference_dtype, scenario.measurement.threads) as engine:
        return diagnose_failure(adapter, engine, reference, result, engine_ids)
