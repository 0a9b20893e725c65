"""The one builder of a point's record: every record (a point that runs, one skipped before it starts, one
whose isolated worker died or ran out of time) starts from ``new_record``, so each carries the same
identity, settings and environment whichever way it ended."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Optional

from harness.records.record import KnownFailure, Record
from harness.run.steps.caches import Caches
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

SETTINGS_PARTS = {
    "model",
    "generation",
    "measurement",
    "prompts",
    "synthetic_prompts",
    "quantization_options",
    "adapter_options",
    "gate",
    "accuracy",
}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_record(caches: Caches, scenario: Scenario, point: Point, started_at: Optional[str] = None) -> Record:
    """The point's record as it starts (``ok``; the steps, a skip or the worker's parent say otherwise)."""
    known = scenario.known_failure(point.axes())
    return Record(
        scenario=scenario.name,
        point_id=point.id,
        point=point.axes(),
        status="ok",
        settings=scenario_settings(scenario),
        environment=caches.environment(),
        scenario_path=scenario.source_file,
        started_at=started_at or now_iso(),
        known_failure=KnownFailure(reason=known.reason, strict=known.strict) if known else None,
    )


def scenario_settings(scenario: Scenario) -> dict:
    """The scenario's parts a record keeps as its ``settings`` (what ``--resume`` compares)."""
    return scenario.model_dump(include=SETTINGS_PARTS)


def same_scenario_settings(stored: dict, scenario: Scenario) -> bool:
    """A record's ``settings`` are the scenario's: a setting the record lacks (added to the schema after
    it was written, e.g. ``measurement.canary_tolerance``) counts as its default, so an older record
    still resumes when the scenario leaves the new setting at its default."""

    def as_stored(settings: dict):  # as a record holds them: read back from JSON
        return json.loads(json.dumps(settings))

    return as_stored(_with_defaults(stored, scenario, SETTINGS_PARTS)) == as_stored(scenario_settings(scenario))


def _with_defaults(stored: dict, model: Any, names) -> dict:
    """``stored`` (a dump of ``model``'s fields ``names``) with each field it lacks at the field's default,
    nested models alike; a field without a default stays missing (so the settings differ)."""
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    out = dict(stored)
    fields = type(model).model_fields
    for name in names:
        value = getattr(model, name)
        if name not in stored:
            default = fields[name].get_default(call_default_factory=True)
            if default is not PydanticUndefined:
                out[name] = default.model_dump() if isinstance(default, BaseModel) else default
        elif isinstance(value, BaseModel) and isinstance(stored[name], dict):
            out[name] = _with_defaults(stored[name], value, type(value).model_fields)
    return out
