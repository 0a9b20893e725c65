"""The beam check of a point timed with ``beam_width`` > 1 (``harness.correctness.beams``), after the gate on the
same loaded engine, against HF transformers in the reference dtype: ``correctness.beams`` records it, and a
failed check fails the point."""

from __future__ import annotations

from typing import Optional

from harness.adapters.base import Adapter
from harness.records.correctness import Correctness
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


def check_beams(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, reference, correctness: Optional[Correctness]
) -> Contribution:
    from harness.correctness import beams
    from harness.correctness.reference import hf_engine

    point = resolved.point
    if correctness is None or reference is None or correctness.skipped or point.beam_width <= 1:
        return Contribution()
    found = beams.skipped(adapter, point.beam_width)
    if found is None:
        ctx.on_phase(f"{point.id}: beams")
        scenario = resolved.scenario
        with hf_engine(resolved.model, scenario.gate.reference_dtype, scenario.measurement.threads) as engine:
            found = beams.check(adapter, engine, reference, point.beam_width, reference.settings["tokens"])
    update: dict = {"beams": found}
    if correctness.path is not None and found.skipped is None:
        update["path"] = correctness.path.model_copy(update={"checks": [*correctness.path.checks, "beams"]})
    if found.verdict == "fail":
        update["verdict"] = "fail"
        update["reasons"] = [*correctness.reasons, *found.reasons]
        update["report"] = "\n".join(filter(None, [correctness.report, *found.reasons]))
    return Contribution(updates={"correctness": correctness.model_copy(update=update)})
