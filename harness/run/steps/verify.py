"""Correctness (the top-k agreement gate against the HF reference, with diagnosis) and task accuracy."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from harness.adapters.base import Adapter, now_ns
from harness.errors import Unsupported
from harness.models import prompts
from harness.records.correctness import DRIFT, FAIL, NOT_JUDGED
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


def same_weights(
    session: Session, resolved: ResolvedPoint, adapter: Adapter, hf_reference, correctness: Optional[Correctness]
) -> Contribution:
    """A quantized point against its own weights on the adapter's trusted twin (``harness.correctness.same_weights``):
    ``correctness.same_weights`` holds that comparison (or why there is none) and the dequantized check of
    the twin's artefact against the HF checkpoint (``harness.correctness.dequantized``) and the point against
    transformers running those dequantized weights (``harness.correctness.dequantized_model``); the point's
    verdict becomes ``same_weights.combine`` of the four."""
    from harness.correctness import dequantized, gate
    from harness.correctness import same_weights as sw
    from harness.records.record import SameWeights

    if correctness is None:
        return Contribution()
    point = resolved.point
    why = sw.skip_reason(adapter, point, correctness)
    twin = adapter.trusted_twin() if why is None else None
    if isinstance(twin, str):  # an adapter without a trusted twin says why
        why = twin
    if why is not None:
        return Contribution(
            updates={"correctness": correctness.model_copy(update={"same_weights": SameWeights(skipped=why)})}
        )

    def stored(twin, label: str):
        def compute():
            reference, path, reused = sw.get_or_compute(
                session.reference_store, twin, hf_reference, session.refresh_reference, label
            )
            session.log(
                f"{label} reference: reused {path}"
                if reused
                else f"{label} reference: computed in {reference.compute_s:.1f} s, stored at {path}"
            )
            return reference

        return session.reference(sw.path_for(session.reference_store, hf_reference, twin, label), compute)

    reference = stored(twin, "same-weights")
    spec = resolved.scenario.gate
    config = gate.GateConfig(
        k=spec.k,
        mode=spec.mode,
        drift_factor=spec.drift_factor,
        fail_factor=spec.fail_factor,
        min_positions=spec.min_positions,
    )
    result = sw.compare(
        adapter, reference, config, on_prompt=lambda j, m: session.progress(f"{point.id}: same-weights prompt {j}/{m}")
    )
    if isinstance(result, gate.NotRun):
        found = SameWeights(skipped=result.why)
    else:
        report = gate.format_failures(result, reference, resolved.tokenizer) if result.reasons else ""
        found = sw.summary(result, reference, correctness.verdict, report)
    audit = dequantized.check(session.reference_store, resolved.model, twin, refresh=session.refresh_reference)
    model_check = dequantized_model(session, resolved, adapter, twin, audit, config, stored)
    found = found.model_copy(update={"dequantized": audit, "dequantized_model": model_check})
    verdict, why = sw.combine(
        correctness.verdict,
        found.verdict,
        audit.verdict if audit else None,
        model_check.verdict if model_check else None,
    )
    update = {"same_weights": found, "verdict": verdict}
    details = list(audit.reasons) if audit and audit.verdict == "fail" else []
    details += model_check.reasons if model_check and model_check.verdict not in (None, "pass") else []
    if why or details:
        unjudged = correctness.verdict == NOT_JUDGED and verdict == FAIL  # its reason becomes a note
        update["reasons"] = [*([] if unjudged else correctness.reasons), *filter(None, [why]), *details]
        if unjudged:
            update["notes"] = [*correctness.reasons, *correctness.notes]
        update["report"] = "\n".join(
            filter(None, [correctness.report, why and f"same weights: {why}", *details, found.report])
        )
    return Contribution(updates={"correctness": correctness.model_copy(update=update)})


def dequantized_model(session: Session, resolved: ResolvedPoint, adapter: Adapter, twin, audit, config, stored):
    """The point against HF transformers running its artefact's dequantized weights
    (``harness.correctness.dequantized_model``), or None where the twin has no weights reader."""
    from harness.correctness import dequantized_model as dm
    from harness.correctness import gate
    from harness.records.record import DequantizedModel

    model_twin = dm.twin_of(resolved.model, twin, resolved.scenario.measurement.threads)
    if model_twin is None or audit is None:
        return None
    if audit.skipped:  # the artefact cannot be read back: no weights to load
        return DequantizedModel(skipped=audit.skipped)
    reference = stored(model_twin, "dequantized-model")
    point = resolved.point
    # Drift fails where the floor models the engine's activation rounding; against the bf16 floor it is
    # reported only (llama.cpp's Q8_K inputs read 7.7x it on clean Gemma Q4_K_M); the fail line always fails.
    drift_fails = dm.fails_on_drift(model_twin)
    result = gate.run(
        adapter,
        reference,
        replace(config, fail_on_drift=drift_fails),
        lambda j, m: session.progress(f"{point.id}: dequantized prompt {j}/{m}"),
    )
    if isinstance(result, gate.NotRun):
        return DequantizedModel(skipped=result.why)
    return dm.summary(result, reference, drift_fails)


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
