"""A speculative point's side-by-side timing: right after its timed rounds, the same loaded target times
the same prompts without speculation (``Adapter.generate_plain``, the same stopping rule), so the speed-up
compares two paths of one launch on one machine state; the acceptance figures come from the speculative
rounds' verify steps (``harness.measure.speculation``)."""

from __future__ import annotations

from harness.adapters.base import Adapter
from harness.measure import speculation
from harness.measure.rounds import Stopping, run_rounds, summarize
from harness.run.steps import finite
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint
from harness.run.steps.timing import Timed


def side_by_side(ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, timed: Timed) -> Contribution:
    point = resolved.point
    if point.speculative == "none":
        return Contribution()
    m = resolved.scenario.measurement
    max_new = resolved.scenario.generation.max_new_tokens

    def generate(index: int, new_tokens: int):
        ctx.on_phase(f"{point.id}: timing without speculation")
        trace = adapter.generate_plain([resolved.prompt_ids[index]], new_tokens)
        finite.check_timestamps(trace)
        return trace

    stopping = Stopping(m.warmup_rounds, len(timed.rounds), 0.0, len(timed.rounds))  # as many rounds as timed
    _, plain_rounds = run_rounds(generate, len(resolved.prompt_ids), stopping, max_new)
    figures = {
        **speculation.summarize_steps(timed.speculation),
        **speculation.speedups(summarize(timed.rounds), summarize(plain_rounds)),
    }
    unavailable = {}
    if figures["spec_acceptance_rate"] is None:
        why = (
            f"{point.adapter} exposed no verify steps here (neither per-step tokens nor an accepted count)"
            if not timed.speculation
            else "no candidate was drafted in the timed rounds"
        )
        unavailable.update(dict.fromkeys(("spec_acceptance_rate", "spec_accepted_per_step"), why))
    if figures["spec_draft_ms_per_token"] is None:
        unavailable["spec_draft_ms_per_token"] = f"{point.adapter} does not expose the draft's own time"
    return Contribution(metrics=figures, unavailable=unavailable)
