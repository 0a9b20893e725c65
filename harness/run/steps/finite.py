"""Non-finite values from an engine (NaN, infinity) never reach a record: records are strict JSON; nor do
metrics no measurement can give (``harness.records.physics``: a negative duration, a week-long one), which
every reader would refuse.

A metric that is not finite becomes ``null`` with the reason in ``record.unavailable``; a non-finite
value anywhere else (raw samples, gate figures, the adapter's description) is dropped from its part,
or the part is dropped when it cannot stand without it. Either way the point is ``failed``: an engine
that computes NaN is broken, and only this point says so.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from harness.errors import HarnessError
from harness.io import nonfinite_paths
from harness.records.physics import metric_problem
from harness.records.record import Record


class NonFinite(HarnessError):
    """The engine gave a value no statistic can be computed from (its token timestamps)."""


def why(value: float) -> str:
    return f"the engine produced a non-finite value ({value})"


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def check_timestamps(trace) -> None:
    """Timestamps are the input of every timing figure; a NaN among them fails the point here, before
    the statistics (which would raise something unrelated)."""
    bad = next((t for t in (trace.start_ns, *trace.token_ns) if not _finite(t)), None)
    if bad is not None:
        raise NonFinite(f"{why(bad)} in its token timestamps")


def _scrub(data: Any) -> Any:
    """``data`` without its non-finite floats: dropped from mappings (a field falls back to its
    default), ``None`` in lists (the part's validation decides whether that can stand)."""
    if isinstance(data, dict):
        return {key: _scrub(value) for key, value in data.items() if _finite(value)}
    if isinstance(data, list):
        return [_scrub(value) if _finite(value) else None for value in data]
    return data


def scrub(record: Record) -> list[str]:
    """Remove non-finite values from ``record`` in place and fail the point when there were any.
    Returns the fields that held them."""
    found: list[tuple[str, float]] = []
    for name, value in list(record.metrics.items()):
        if not _finite(value):
            record.metrics[name] = None
            record.unavailable[name] = why(value)
            found.append((f"metrics.{name}", value))
    for name in Record.model_fields:
        value = getattr(record, name)
        dumped = value.model_dump(mode="python") if hasattr(value, "model_dump") else value
        bad = [] if name == "metrics" else nonfinite_paths(dumped, name)
        if not bad:
            continue
        found += bad
        try:
            setattr(record, name, _scrub(dumped))
        except ValidationError:  # e.g. a timed round without its duration: the part goes
            setattr(record, name, Record.model_fields[name].get_default(call_default_factory=True))
    if found and record.status in ("ok", "skipped"):
        fields = ", ".join(field for field, _ in found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        record.status, record.reason = "failed", f"{why(found[0][1])} in {fields}"
    return [field for field, _ in found]


def scrub_impossible(record: Record) -> list[str]:
    """Null the metrics (and launch medians) ``harness.records.physics`` refuses, with the reason, and fail
    the point, as for a NaN: the record stays readable and says what the engine gave. Returns the problems."""
    found = []
    for name, value in list(record.metrics.items()):
        problem = metric_problem(f"metrics.{name}", name, value)
        if problem:
            record.metrics[name] = None
            record.unavailable[name] = f"the engine produced an impossible value ({problem})"
            found.append(problem)
    for entry in record.samples.launches:
        for name, value in list(entry.medians.items()):
            if metric_problem(name, name, value):
                del entry.medians[name]
    if found and record.status in ("ok", "skipped"):
        record.status, record.reason = "failed", f"the engine produced an impossible value: {found[0]}"
    return found
