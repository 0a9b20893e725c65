"""A point's run as a sequence of steps over a resolved point.

resolve -> references -> load -> time -> probes -> correctness -> accuracy -> routing -> describe.
Each step is a small function that returns its ``Contribution`` to the record; ``execute`` applies them
in order. Nothing here writes files or knows about sweeps, isolation or progress bars (``harness.run.runner``
and ``harness.run.launchers`` orchestrate those), so the in-process launcher and the isolated worker run
exactly the same code.

What the steps read comes in by lifetime (``LaunchContext``): the run's settings, the caches of the process
running the launch, and the launch's own switch (``first_launch``) and callbacks, passed to ``execute``.
"""

from __future__ import annotations

import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.errors import HarnessError, StepFailed, WriteFailed, remembering
from harness.measure import canary, launch_stats
from harness.models import cache_build
from harness.records import metric_names
from harness.records.engine import EngineInfo
from harness.records.record import Failure, Record
from harness.records.samples import TimeSplit
from harness.run.settings import RunSettings
from harness.run.steps import finite
from harness.run.steps.caches import Caches
from harness.run.steps.contribution import Contribution, apply
from harness.run.steps.launch_context import LaunchContext, quiet
from harness.run.steps.new_record import new_record, now_iso
from harness.run.steps.skip import Skip
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

__all__ = ["Caches", "Contribution", "LaunchContext", "Skip", "execute", "new_record"]


def engine_info(adapter: Adapter, settings: LoadSettings) -> EngineInfo:
    """The record's engine part: the adapter's ``describe()`` plus the options its ``load`` received (the
    scenario's ``adapter_options`` for it, validated, defaults filled in)."""
    engine = EngineInfo.from_description(adapter.describe())
    return engine.model_copy(update={"options": settings.options.model_dump(mode="json")})


def execute(
    settings: RunSettings,
    caches: Caches,
    scenario: Scenario,
    point: Point,
    first_launch: bool = True,
    on_phase: Callable[[str], None] = quiet,
    log: Callable[[str], None] = quiet,
    on_round: Optional[Callable[[int], None]] = None,
) -> Record:
    """Run one launch of a point in this process; any engine failure becomes a ``failed`` record, never an
    exception. ``first_launch``: the correctness gate and accuracy run too; ``on_phase`` hears the point's
    phase, ``log`` its progress lines, ``on_round`` each timed round's index."""
    ctx = LaunchContext(settings, caches, first_launch, on_phase, log)
    record = new_record(caches, scenario, point)
    clock = Clock()
    try:
        # a removed build leftover is said where the point's lines go; a step that failed for an earlier point
        # of the same file fails this one without running again; the builds' time is the split's conversion
        with cache_build.notes_to(log), remembering(caches.failures), cache_build.builds_timed(clock.built):
            _steps(ctx, scenario, point, record, on_round, clock)
    except (Skip, PointSkipped) as skip:
        record.status, record.reason = "skipped", str(skip)
    except Exception as exc:  # noqa: BLE001 - any engine failure becomes a failed record
        record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}".strip()
        if isinstance(exc, WriteFailed):  # a reference store that cannot be written: how to finish the set
            record.reason += f"; fix it, then {resume_command(settings, scenario)}"
        if not isinstance(exc, HarnessError) or isinstance(exc, StepFailed):  # an engine's: where it broke
            record.failure = Failure(traceback=traceback.format_exc(limit=-8))
    finite.scrub(record)  # NaN/infinity from the engine: null with the reason, and this point fails
    finite.scrub_impossible(record)  # a negative or week-long figure: the same
    record.time_split = clock.split(record)
    record.finished_at = now_iso()
    return record


def resume_command(settings: RunSettings, scenario: Scenario) -> str:
    """What finishes a set whose point failed on a store write: the run again with ``--resume``."""
    if settings.results_dir is None:  # harness verify: nothing to resume, the command again
        return f"run again: harness verify {scenario.path or scenario.name}"
    from harness.io import REFERENCE_DIR

    default = Path(settings.results_dir) / REFERENCE_DIR
    given = settings.reference_dir is not None and Path(settings.reference_dir) != default
    references = f" --reference-dir {settings.reference_dir}" if given else ""
    return (
        f"complete the set with: harness run {scenario.path or scenario.name} --results {settings.results_dir}"
        f"{references} --resume"
    )


class Clock:
    """Where a point's wall time goes (``record.time_split``): each step's span by name; the timed
    rounds' own durations split the timing step into warm-up, measured inference and the rest; the
    artefacts built meanwhile (``built``: a model's conversion, an IR export, a tokenizer conversion, a GGUF
    conversion or quantization, failed ones included) are the conversion, taken out of the span they ran in."""

    def __init__(self):
        self.start, self.spans = time.perf_counter(), {}
        self.built_s, self._open, self._built_in = 0.0, [], {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        self._open.append(name)
        try:
            yield
        finally:
            self._open.remove(name)
            self.spans[name] = self.spans.get(name, 0.0) + time.perf_counter() - start

    def built(self, seconds: float) -> None:
        self.built_s += seconds
        for name in self._open:
            self._built_in[name] = self._built_in.get(name, 0.0) + seconds

    def _span(self, name: str) -> float:
        return max(0.0, self.spans.get(name, 0.0) - self._built_in.get(name, 0.0))

    def add(self, name: str, seconds: float) -> None:
        """A span timed elsewhere (the canary's edges, inside the timing step)."""
        self.spans[name] = self.spans.get(name, 0.0) + seconds

    def split(self, record: Record) -> TimeSplit:
        total = time.perf_counter() - self.start
        samples = record.samples
        parts = {
            "conversion_s": self.built_s,
            "resolve_s": self._span("resolve"),  # the model's conversion happens inside it
            "load_s": self._span("load"),
            "warmup_s": sum(samples.warmup_s),
            "canary_s": self.spans.get("canary", 0.0),
            "timed_s": sum(r.e2e_s for r in samples.rounds),
            "gate_s": self._span("gate"),
            "accuracy_s": self._span("accuracy"),
        }
        return TimeSplit(**parts, other_s=max(0.0, total - sum(parts.values())))


def _steps(ctx: LaunchContext, scenario: Scenario, point: Point, record: Record, on_round, clock: Clock) -> None:
    from harness.run.steps import check_accuracy, check_correctness, probes, resolve, speculative_timing, timing
    from harness.run.steps.check_beams import check_beams
    from harness.run.steps.check_same_weights import check_same_weights
    from harness.run.steps.check_speculative import check_speculative
    from harness.run.steps.check_stopping import check_stopping
    from harness.run.steps.check_text_path import check_text_path

    probes.reset_peak_rss()  # a persistent worker's earlier points do not count towards this one's peak
    first_use = not ctx.caches.has_model(scenario)
    ctx.on_phase(f"{point.id}: {'converting/resolving the model' if first_use else 'resolving'}")
    with clock("resolve"):
        resolved = resolve.resolve(ctx, scenario, point)
    apply(record, resolved.contribution)
    gate_reference = accuracy_reference = None
    references_before = ctx.caches.references_s
    if ctx.first_launch:  # references before the device loads
        if scenario.gate is not None:  # computing one can take minutes: say so before, not after
            ctx.on_phase(f"{point.id}: gate reference (computed once, then reused)")
        with clock("gate"):
            gate_reference = check_correctness.gate_reference(ctx, scenario, resolved.model, point)
        with clock("accuracy"):
            accuracy_reference = check_accuracy.accuracy_reference(ctx, scenario, resolved.model)
    ctx.on_phase(f"{point.id}: loading {point.adapter} on {point.device}")
    with clock("load"):
        loaded = resolve.load(resolved, ctx.caches)
    adapter = loaded.adapter
    apply(record, loaded.contribution)
    adapter.reset_device_memory_peak()  # a reused engine or a persistent worker: this point's peak only
    healthy = False
    try:
        if ctx.timing:
            timed = timing.time(ctx, resolved, adapter, on_round, kept_from=loaded.kept_from)
            clock.add("canary", timed.canary_s)
            apply(record, timed.contribution)
            apply(record, speculative_timing.side_by_side(ctx, resolved, adapter, timed))
            apply(record, probes.device_memory(adapter))
            if timed.meter is not None:
                apply(record, probes.probes(ctx, resolved, adapter, timed))
            else:  # said, not silently dropped: what --no-energy leaves out
                apply(record, probes.not_probed())
            # The launch's entry once every per-launch figure (energy included) is known.
            wall_s = round(time.perf_counter() - clock.start, 3)
            tolerance = scenario.measurement.canary_tolerance
            record.samples.launches = [
                launch_stats.launch(
                    record.metrics,
                    timed.rounds,
                    machine=timed.machine,
                    started_at=record.started_at,
                    wall_s=wall_s,
                    canary=timed.canary,
                    excluded=canary.exclusion(timed.canary, timed.machine.get("noisy"), tolerance),
                )
            ]
        if gate_reference is not None:
            from harness.correctness.own_stopping import OwnStopping

            own = OwnStopping(adapter)  # the gate prompts' generations, shared by the text path and stopping
            with clock("gate"):
                apply(record, check_correctness.check_correctness(ctx, resolved, adapter, gate_reference))
                apply(record, check_same_weights(ctx, resolved, adapter, gate_reference, record.correctness))
                apply(record, check_text_path(ctx, resolved, adapter, gate_reference, record.correctness, own))
                apply(record, check_beams(ctx, resolved, adapter, gate_reference, record.correctness))
                apply(record, check_stopping(ctx, resolved, adapter, gate_reference, record.correctness, own))
                apply(record, check_speculative(ctx, resolved, adapter, gate_reference, record.correctness))
            if record.correctness is not None and record.correctness.reference is not None:
                # every stored reference this point got (gate, same weights, dequantized model, stop prompts)
                record.correctness.reference.obtained_s = round(ctx.caches.references_s - references_before, 3)
        if scenario.accuracy is not None and ctx.timing and ctx.first_launch:  # `harness verify`: the gate alone
            with clock("accuracy"):
                apply(record, check_accuracy.check_accuracy(resolved, adapter, accuracy_reference, record.point_id))
        apply(record, probes.routing(adapter, resolved.prompt_ids))
        apply(record, Contribution(updates={"engine": engine_info(adapter, resolved.settings)}))
        healthy = True
    finally:
        resolve.release(ctx.caches, resolved, loaded, healthy)
    apply(record, probes.process(resolved))
    record.units = metric_names.units(record.metrics)
