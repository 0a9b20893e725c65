"""A point's run as a sequence of steps over a resolved point.

resolve -> references -> load -> time -> probes -> correctness -> accuracy -> routing -> describe.
Each step is a small function that returns its ``Contribution`` to the record; ``execute`` applies them
in order. Nothing here writes files or knows about sweeps, isolation or progress bars (``harness.run.runner``
orchestrates those), so the in-process runner and the isolated worker run exactly the same code.
"""

from __future__ import annotations

import time
import traceback
from contextlib import contextmanager
from typing import Callable, Optional

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.errors import HarnessError
from harness.measure import canary, launches
from harness.records import metrics
from harness.records.engine import EngineInfo
from harness.records.record import Failure, Record
from harness.records.samples import TimeSplit
from harness.run.steps import finite
from harness.run.steps.contribution import Contribution, apply
from harness.run.steps.session import Session, now_iso
from harness.run.steps.skip import Skip
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

__all__ = ["Contribution", "Session", "Skip", "execute", "new_record"]


def new_record(session: Session, scenario: Scenario, point: Point) -> Record:
    return Record(
        scenario=scenario.name,
        point_id=point.id,
        point=point.axes(),
        status="ok",
        settings=session.settings_of(scenario),
        environment=session.environment(),
        scenario_path=scenario.source_file,
        started_at=now_iso(),
    )


def engine_info(adapter: Adapter, settings: LoadSettings) -> EngineInfo:
    """The record's engine part: the adapter's ``describe()`` plus the options its ``load`` received (the
    scenario's ``adapter_options`` for it, validated, defaults filled in)."""
    engine = EngineInfo.from_description(adapter.describe())
    return engine.model_copy(update={"options": settings.options.model_dump(mode="json")})


def execute(
    session: Session, scenario: Scenario, point: Point, on_round: Optional[Callable[[int], None]] = None
) -> Record:
    """Run one point in this process; any engine failure becomes a ``failed`` record, never an exception."""
    record = new_record(session, scenario, point)
    clock = Clock()
    try:
        _steps(session, scenario, point, record, on_round, clock)
    except (Skip, PointSkipped) as skip:
        record.status, record.reason = "skipped", str(skip)
    except Exception as exc:  # noqa: BLE001 - any engine failure becomes a failed record
        record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}".strip()
        if not isinstance(exc, HarnessError):
            record.failure = Failure(traceback=traceback.format_exc(limit=-8))
    finite.scrub(record)  # NaN/infinity from the engine: null with the reason, and this point fails
    record.time_split = clock.split(record)
    record.finished_at = now_iso()
    return record


class Clock:
    """Where a point's wall time goes (``record.time_split``): each step's span by name; the timed
    rounds' own durations split the timing step into warm-up, measured inference and the rest."""

    def __init__(self):
        self.start, self.spans = time.perf_counter(), {}

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spans[name] = self.spans.get(name, 0.0) + time.perf_counter() - start

    def split(self, record: Record) -> TimeSplit:
        total = time.perf_counter() - self.start
        samples = record.samples
        parts = {
            "conversion_s": record.metrics.get("convert_s") or 0.0,
            "load_s": self.spans.get("load", 0.0),
            "warmup_s": sum(samples.warmup_s),
            "timed_s": sum(r.e2e_s for r in samples.rounds),
            "gate_s": self.spans.get("gate", 0.0),
            "accuracy_s": self.spans.get("accuracy", 0.0),
        }
        return TimeSplit(**parts, other_s=max(0.0, total - sum(parts.values())))


def _steps(session: Session, scenario: Scenario, point: Point, record: Record, on_round, clock: Clock) -> None:
    from harness.run.steps import probes, resolve, text_path, timing, verify
    from harness.run.steps import same_weights as own_weights

    probes.reset_peak_rss()  # a persistent worker's earlier points do not count towards this one's peak
    first_use = not session.has_model(scenario)
    session.progress(f"{point.id}: {'converting/resolving the model' if first_use else 'resolving'}")
    resolved = resolve.resolve(session, scenario, point)
    apply(record, resolved.contribution)
    gate_reference = accuracy_reference = None
    if session.verify:  # references before the device loads
        with clock("gate"):
            gate_reference = verify.gate_reference(session, scenario, resolved.model, point)
        with clock("accuracy"):
            accuracy_reference = verify.accuracy_reference(session, scenario, resolved.model)
    session.progress(f"{point.id}: loading {point.adapter} on {point.device}")
    with clock("load"):
        adapter, loaded = resolve.load(resolved, session)
    apply(record, loaded)
    adapter.reset_device_memory_peak()  # a reused engine or a persistent worker: this point's peak only
    healthy = False
    try:
        if session.timing:
            timed = timing.time(session, resolved, adapter, on_round)
            apply(record, timed.contribution)
            apply(record, probes.device_memory(adapter))
            if timed.meter is not None:
                apply(record, probes.probes(session, resolved, adapter, timed))
            else:  # said, not silently dropped: what --no-energy leaves out
                apply(record, probes.not_probed())
            # The launch's entry once every per-launch figure (energy included) is known.
            wall_s = round(time.perf_counter() - clock.start, 3)
            tolerance = scenario.measurement.canary_tolerance
            record.samples.launches = [
                launches.launch(
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
            with clock("gate"):
                apply(record, verify.correctness(session, resolved, adapter, gate_reference))
                apply(record, own_weights.same_weights(session, resolved, adapter, gate_reference, record.correctness))
                apply(record, text_path.check(session, resolved, adapter, gate_reference, record.correctness))
        if scenario.accuracy is not None and session.timing and session.verify:  # `harness verify`: the gate alone
            with clock("accuracy"):
                apply(record, verify.accuracy(resolved, adapter, accuracy_reference, record.point_id))
        apply(record, probes.routing(adapter, resolved.prompt_ids))
        apply(record, Contribution(updates={"engine": engine_info(adapter, resolved.settings)}))
        healthy = True
    finally:
        resolve.release(session, resolved, adapter, healthy)
    apply(record, probes.process(resolved))
    record.units = metrics.units(record.metrics)
