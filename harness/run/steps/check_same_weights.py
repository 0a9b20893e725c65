"""A quantized point against its own weights: the trusted twin running the same artefact, the artefact read
back against the HF checkpoint, and transformers running those dequantized weights
(``harness.correctness.same_weights``, ``.dequantized``, ``.dequantized_model``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from harness.adapters.base import Adapter
from harness.correctness.outcome import NotRun, format_failures
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import FAIL, NOT_JUDGED, SAME_WEIGHTS
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint
from harness.scenario.gate_section import GateSettings


def check_same_weights(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, hf_reference, correctness: Optional[Correctness]
) -> Contribution:
    """A quantized point against its own weights on the adapter's trusted twin (``harness.correctness.same_weights``):
    ``correctness.same_weights`` holds that comparison (or why there is none) and the dequantized check of
    the twin's artefact against the HF checkpoint (``harness.correctness.dequantized``) and the point against
    transformers running those dequantized weights (``harness.correctness.dequantized_model``); the point's
    verdict becomes ``same_weights.combine`` of the four."""
    from harness.correctness import dequantized
    from harness.correctness import same_weights as sw
    from harness.records.own_weights import SameWeights

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
                ctx.settings.reference_store, twin, hf_reference, ctx.settings.refresh_reference, label
            )
            ctx.log(
                f"{label} reference: reused {path}"
                if reused
                else f"{label} reference: computed in {reference.compute_s:.1f} s, stored at {path}"
            )
            return reference

        return ctx.caches.reference(sw.path_for(ctx.settings.reference_store, hf_reference, twin, label), compute)

    reference = stored(twin, "same-weights")
    # against identical weights drift is a bug, not quantization: it fails here (``sw.compare``) whatever the
    # scenario's fail_on_drift; the dequantized-model check decides its own (``dm.fails_on_drift``)
    settings = resolved.scenario.gate.settings(quantized=False)
    result = sw.compare(
        adapter,
        reference,
        settings,
        on_prompt=lambda j, m: ctx.on_phase(f"{point.id}: same-weights prompt {j}/{m}"),
    )
    if isinstance(result, NotRun):
        found = SameWeights(skipped=result.why)
    else:
        report = format_failures(result, reference, resolved.tokenizer) if result.reasons else ""
        found = sw.summary(result, reference, correctness.verdict, report)
    audit = dequantized.check(
        ctx.settings.reference_store, resolved.model, twin, refresh=ctx.settings.refresh_reference
    )
    model_check = dequantized_model(ctx, resolved, adapter, twin, audit, settings, stored)
    found = found.model_copy(update={"dequantized": audit, "dequantized_model": model_check})
    verdict, why = sw.combine(
        correctness.verdict,
        found.verdict,
        audit.verdict if audit else None,
        model_check.verdict if model_check else None,
    )
    update = {"same_weights": found, "verdict": verdict}
    if verdict == FAIL and correctness.verdict != FAIL:  # failed here, not against HF: name the check that did
        update["failed_by"] = [SAME_WEIGHTS]
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


def dequantized_model(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, twin, audit, settings: GateSettings, stored
):
    """The point against HF transformers running its artefact's dequantized weights
    (``harness.correctness.dequantized_model``), or None where the twin has no weights reader."""
    from harness.correctness import dequantized_model as dm
    from harness.correctness import gate
    from harness.records.own_weights import DequantizedModel

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
        replace(settings, fail_on_drift=drift_fails),
        lambda j, m: ctx.on_phase(f"{point.id}: dequantized prompt {j}/{m}"),
    )
    if isinstance(result, NotRun):
        return DequantizedModel(skipped=result.why)
    return dm.summary(result, reference, drift_fails)
