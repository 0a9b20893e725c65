"""Correctness (the top-k agreement gate against the HF reference, with diagnosis) and task accuracy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from harness.adapters.base import Adapter, now_ns
from harness.errors import Unsupported
from harness.models import prompts
from harness.records.correctness import DRIFT, FAIL
from harness.records.record import Accuracy, Correctness, GatePath, ReferenceInfo
from harness.run.steps.contribution import Contribution
from harness.run.steps.resolve import ResolvedPoint
from harness.run.steps.session import Session

if TYPE_CHECKING:
    from harness.accuracy.reference import Reference


def gate_selection(session: Session, spec):
    """The gate's prompt selection: ``--prompts`` where given, else the scenario's."""
    return session.gate_prompts if session.gate_prompts is not None else spec.prompts


def gate_reference(session: Session, scenario, model, point=None, selection=None):
    """The point's stored HF reference (computed once per model, prompt set, settings and gate length), or
    None. ``point`` None: the short prompts only. ``selection`` overrides the prompt selection (``gate.power``
    widening it)."""
    if scenario.gate is None:
        return None
    from harness.correctness import lengths
    from harness.correctness.reference import ReferenceSettings, ReferenceStore

    spec = scenario.gate
    pairs = prompts.select_gate_prompts(gate_selection(session, spec) if selection is None else selection)
    plan = (
        lengths.plan(
            spec.length,
            spec.long_prompts,
            point.prompt_len,
            point.max_seq_len,
            scenario.generation.max_new_tokens,
            model.hf_dir,
        )
        if point is not None
        else None
    )
    if plan is not None:
        pairs = pairs + lengths.pairs(plan.count)
        session.log(f"gate length {plan.length} for {point.id}: {plan.why}")
    settings = ReferenceSettings(
        tokens=spec.tokens,
        top_m=max(64, spec.k),
        dtype=spec.reference_dtype,
        threads=scenario.measurement.threads,
        length=plan.length if plan is not None else None,
        prefill_positions=spec.prefill_positions,
    )
    store = ReferenceStore(session.reference_store)

    def compute():
        reference, path, reused = store.get_or_compute(model, pairs, settings, refresh=session.refresh_reference)
        session.log(
            f"reference: reused {path}"
            if reused
            else f"reference: computed in {reference.compute_s:.1f} s, stored at {path}"
        )
        return reference

    return session.reference(store.path_for(model.name, pairs, settings), compute)


def accuracy_reference(session: Session, scenario, model) -> Optional[Reference]:
    spec = scenario.accuracy
    if spec is None or not spec.reference or not session.timing:
        return None
    from harness.accuracy import evaluate as accuracy
    from harness.accuracy.reference import reference

    if accuracy.unavailable():
        return None
    dtype = scenario.gate.reference_dtype if scenario.gate else "bf16"
    key = (model.name, model.checksum, tuple(spec.tasks), spec.limit, spec.num_fewshot, dtype)
    refresh = session.refresh_reference and key not in session.refreshed  # once per session, not per point
    session.refreshed.add(key)
    return reference(
        model,
        spec.tasks,
        spec.limit,
        spec.num_fewshot,
        dtype,
        scenario.measurement.threads,
        session.reference_store,
        log=session.log,
        refresh=refresh,
    )


def correctness(session: Session, resolved: ResolvedPoint, adapter: Adapter, reference) -> Contribution:
    from harness.correctness import gate

    spec = resolved.scenario.gate
    point = resolved.point
    fail_on_drift = not adapter.runs_quantized(point) if spec.fail_on_drift == "auto" else spec.fail_on_drift
    config = gate.GateConfig(
        k=spec.k,
        mode=spec.mode,
        drift_factor=spec.drift_factor,
        fail_factor=spec.fail_factor,
        fail_on_drift=fail_on_drift,
        min_positions=spec.min_positions,
    )
    start = now_ns()

    def run_gate(ref):
        return gate.run(
            adapter, ref, config, on_prompt=lambda j, m: session.progress(f"{point.id}: gate prompt {j}/{m}")
        )

    result = run_gate(reference)
    if isinstance(result, gate.NotRun):  # the engine exposes neither logits nor forced tokens here
        return Contribution(updates={"correctness": Correctness(skipped=result.why)})
    found_power = None
    if spec.power is not None:
        from harness.run.steps.gate_power import widen

        def rerun(selection):
            wider = gate_reference(session, resolved.scenario, resolved.model, point, selection)
            return run_gate(wider), wider

        result, reference, found_power = widen(spec, result, reference, gate_selection(session, spec), rerun)
    part = Correctness.model_validate(
        result.to_dict()
        | {
            "reference": ReferenceInfo(
                created_at=reference.created_at,
                versions=reference.versions,
                noise_floor=reference.noise_floor,
                prompts=len(reference.prompts),
                tokens=reference.settings["tokens"],
            ),
            "length": reference.settings.get("length"),
        }
    )
    part.power = found_power
    part.path = GatePath.model_validate(adapter.gate_path() | {"checks": gate.CHECKS[result.mode]})
    part.report = gate.format_failures(result, reference, resolved.tokenizer) if result.reasons else ""
    if result.verdict in (FAIL, DRIFT):  # a KL tier not judged has no departure to look for
        found = diagnose(resolved, adapter, reference, result)
        part.diagnosis = found.to_dict()
        if found.departs_at is not None:
            part.report += (
                f"\ndiagnosis: activations depart from HF at {found.departs_at} ({found.phase}, prompt {found.prompt})"
            )
    return Contribution(metrics={"gate_s": (now_ns() - start) / 1e9}, updates={"correctness": part})


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


def accuracy(resolved: ResolvedPoint, adapter: Adapter, reference: Optional[Reference], point_id: str) -> Contribution:
    """The point's task scores and per-document outcomes; with ``reference`` (``harness.accuracy.reference.Reference``)
    the delta, its paired test and interval, and the non-inferiority verdict."""
    from harness.accuracy import evaluate as tasks
    from harness.correctness.reference import eos_ids

    spec = resolved.scenario.accuracy
    reason = tasks.unavailable()
    if reason:  # timing and the gate still stand; the record says why accuracy is missing
        return Contribution(updates={"accuracy": Accuracy(skipped=reason)})
    from harness.accuracy.lm_eval_model import HarnessLM

    model, tokenizer = resolved.model, resolved.tokenizer
    start = now_ns()
    lm = HarnessLM.from_adapter(adapter, tokenizer, eos_ids(model, tokenizer), model.engine_name(point_id))
    try:
        scores, outcomes = tasks.evaluate(lm, spec.tasks, spec.limit, spec.num_fewshot)
    except Unsupported as exc:  # an engine with neither logits nor generation to score
        return Contribution(updates={"accuracy": Accuracy(skipped=str(exc))})
    part = Accuracy(tasks=scores, outcomes=outcomes, limit=spec.limit, num_fewshot=spec.num_fewshot)
    if reference is not None:
        from harness.accuracy.paired import compare
        from harness.accuracy.reference import delta

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
