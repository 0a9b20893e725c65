"""A point's run as a sequence of steps over a resolved point.

resolve -> references -> load -> time -> probes -> correctness -> accuracy -> routing -> describe.
Each step is a small function that returns its ``Part`` of the record; ``execute`` applies the parts
in order. Nothing here writes files or knows about sweeps, isolation or progress bars (``harness.runner``
orchestrates those), so the in-process runner and the isolated worker run exactly the same code.
"""

from __future__ import annotations

import traceback
from typing import Callable, Optional

from harness import metrics
from harness.adapter import PointSkipped
from harness.errors import HarnessError
from harness.record import Failure, Record
from harness.scenario import Scenario
from harness.steps import finite
from harness.steps.part import Part, Skip, apply
from harness.steps.session import Session, now_iso
from harness.sweep import Point

__all__ = ["Part", "Session", "Skip", "execute", "new_record"]


def new_record(session: Session, scenario: Scenario, point: Point) -> Record:
    return Record(scenario=scenario.name, point_id=point.id, point=point.axes(), status="ok",
                  settings=session.settings_of(scenario), environment=session.environment(),
                  scenario_path=scenario.path, started_at=now_iso())


def execute(session: Session, scenario: Scenario, point: Point,
            on_round: Optional[Callable[[int], None]] = None) -> Record:
    """Run one point in this process; any engine failure becomes a ``failed`` record, never an exception."""
    record = new_record(session, scenario, point)
    try:
        _steps(session, scenario, point, record, on_round)
    except (Skip, PointSkipped) as skip:
        record.status, record.reason = "skipped", str(skip)
    except Exception as exc:  # noqa: BLE001 - any engine failure becomes a failed record
        record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}".strip()
        if not isinstance(exc, HarnessError):
            record.failure = Failure(traceback=traceback.format_exc(limit=-8))
    finite.scrub(record)  # NaN/infinity from the engine: null with the reason, and this point fails
    record.finished_at = now_iso()
    return record


def _steps(session: Session, scenario: Scenario, point: Point, record: Record, on_round) -> None:
    from harness.steps import probes, resolve, timing, verify

    first_use = not session.has_model(scenario)
    session.progress(f"{point.id}: {'converting/resolving the model' if first_use else 'resolving'}")
    resolved = resolve.resolve(session, scenario, point)
    apply(record, resolved.part)
    gate_reference = verify.gate_reference(session, scenario, resolved.model)  # before the device loads
    accuracy_reference = verify.accuracy_reference(session, scenario, resolved.model)
    session.progress(f"{point.id}: loading {point.adapter} on {point.device}")
    adapter, loaded = resolve.load(resolved)
    apply(record, loaded)
    try:
        if session.timing:
            timed = timing.time(session, resolved, adapter, on_round)
            apply(record, timed.part)
            if timed.meter is not None:
                apply(record, probes.probes(session, resolved, adapter, timed))
        if gate_reference is not None:
            apply(record, verify.correctness(session, resolved, adapter, gate_reference))
        if scenario.accuracy is not None and session.timing:  # `harness verify` runs the gate alone
            apply(record, verify.accuracy(resolved, adapter, accuracy_reference, record.point_id))
        apply(record, probes.routing(adapter, resolved.prompt_ids))
        apply(record, Part(updates={"adapter": adapter.describe()}))
    finally:
        adapter.close()
    apply(record, probes.process(resolved))
    record.units = metrics.units(record.metrics)
