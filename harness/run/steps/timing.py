"""The timed rounds: warm-up, then rounds until the stopping rule is met, inside one energy window."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Optional

from harness.adapters.base import Adapter
from harness.measure import canary, machine_state
from harness.measure.rounds import Round, Stopping, run_rounds, summarize, summarize_engine
from harness.records.samples import CanaryReading, Samples
from harness.run.steps import finite
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


@dataclass
class Timed:
    contribution: Contribution
    rounds: list[Round]
    meter: Any = None  # the energy meter, when energy is measured
    window: Any = None  # the meter's reading over the timed rounds
    cycles: tuple[Optional[float], Optional[str]] = (None, None)  # (cycles, why not measured)
    machine: dict = field(default_factory=dict)  # machine_state over the timed rounds
    canary: Optional[CanaryReading] = None  # the machine-speed canary at the window's edges
    canary_s: float = 0.0  # the wall time its two readings took
    speculation: list = field(default_factory=list)  # each timed round's VerifySteps, where it speculated


# A warm-up round on an engine kept loaded from the previous point: its prefill at this point's prompt and one
# decode step (llama-bench warms up on the prompt and one token; optimum-benchmark on two new tokens). The
# engine ran its full-length warm-up and rounds for the earlier point.
KEPT_ENGINE_WARMUP_TOKENS = 2


def warmup_tokens(max_new: int, asked: Optional[int], kept_from: Optional[str]) -> int:
    """New tokens each warm-up round generates: the scenario's ``warmup_new_tokens`` when given, else
    ``KEPT_ENGINE_WARMUP_TOKENS`` on an engine kept from an earlier point (``kept_from``) (at most the timed
    rounds' length), else the timed rounds' length."""
    if asked is not None:  # at most max_new: the scenario's loader refuses more
        return asked
    return min(KEPT_ENGINE_WARMUP_TOKENS, max_new) if kept_from is not None else max_new


def time(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, on_round=None, kept_from: Optional[str] = None
) -> Timed:
    """Warm up, then time the rounds. ``kept_from``: the point the reused engine was loaded for (warm-ups short)."""
    scenario, point, prompt_ids = resolved.scenario, resolved.point, resolved.prompt_ids
    max_new = scenario.generation.max_new_tokens
    outputs: dict[int, list[int]] = {}
    engine_figures: list[dict] = []
    verify_steps: list = []  # per generation (warm-ups first), where the point speculates

    m = scenario.measurement
    warmup_new = warmup_tokens(max_new, m.warmup_new_tokens, kept_from)
    calls = [0]
    rounds_note = f"{m.min_rounds}+" if m.min_time_s > 0 else str(m.min_rounds)

    def generate(index: int, new_tokens: int):
        calls[0] += 1  # shown before the engine's clock starts, so the display costs the round nothing
        done = calls[0] - m.warmup_rounds
        ctx.on_phase(
            f"{point.id}: warm-up {calls[0]}/{m.warmup_rounds}"
            if done <= 0
            else f"{point.id}: timing round {done}/{rounds_note}"
        )
        trace = adapter.generate([prompt_ids[index]] * point.batch_size, new_tokens)
        finite.check_timestamps(trace)
        if trace.output_ids and new_tokens == max_new:  # a shorter warm-up's text is not the point's output
            outputs[index] = trace.output_ids[0]
        engine_figures.append(trace.engine_metrics)
        if trace.speculation is not None:
            verify_steps.append(trace.speculation)
        return trace

    stopping = Stopping(m.warmup_rounds, m.min_rounds, m.min_time_s, m.max_rounds)
    windows: dict = {}
    meter = ctx.caches.energy_meter() if ctx.settings.energy else None

    @contextlib.contextmanager
    def energy_window():
        with (
            canary.around(ctx.caches.canary) as edges,  # the canary runs just outside the window, at both edges
            machine_state.watch() as machine,  # the machine's state over the timed rounds, with the launch
        ):
            try:
                with meter_window():
                    yield
            finally:
                windows["machine"] = machine
        windows["canary"], windows["canary_s"] = edges.result(), edges.seconds

    @contextlib.contextmanager
    def meter_window():
        if meter is None:
            yield
            return
        from harness.measure.energy import CycleCounter

        cycles = CycleCounter()
        cycles.begin()
        meter.begin("generation")
        try:
            yield
        finally:  # closed even when a round fails, so the next point can open its own
            windows["generation"] = meter.end("generation")
            windows["cycles"] = (cycles.end(), cycles.reason)

    warmups, rounds = run_rounds(
        generate, len(prompt_ids), stopping, max_new, on_round, energy_window, warmup_tokens=warmup_new
    )
    figures = {
        **summarize(rounds),
        **summarize_engine(engine_figures[len(warmups) :]),
        "first_call_s": warmups[0] if warmups and kept_from is None else None,
    }
    unavailable = {}
    if kept_from is not None and warmups:
        unavailable["first_call_s"] = f"engine reused: its first call was {kept_from}'s"
    machine = windows["machine"].result().to_dict() if "machine" in windows else {}
    contribution = Contribution(
        metrics=figures,
        unavailable=unavailable,
        updates={
            "samples": Samples(
                rounds=[r.to_dict() for r in rounds],
                warmup_s=warmups,
                warmup_tokens=[warmup_new] * len(warmups),
            ),
            "outputs": {str(i): resolved.tokenizer.decode(ids) for i, ids in sorted(outputs.items())},
            "prompt_lengths": [len(p) for p in prompt_ids],
        },
    )
    return Timed(
        contribution,
        rounds,
        meter,
        windows.get("generation"),
        windows.get("cycles", (None, None)),
        machine=machine,
        canary=windows.get("canary"),
        canary_s=windows.get("canary_s", 0.0),
        speculation=verify_steps[len(warmups) :],
    )
