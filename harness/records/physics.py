"""What a record's values may be, beyond their types: a record read back must describe something that could
have happened. Pydantic checks the shapes (``harness.records.record``); ``impossible`` checks the values, and
``Record.from_dict`` (the one loader every reader uses: summary, report, gate, compare, baselines, history,
merge) refuses the first impossible one in one line naming the field.

The rules, per field:

- ``scenario`` and ``point_id`` are safe path components: not empty, no ``/`` or ``\\``, no ``..``, no NUL
  or other control character (they name files and URLs downstream).
- Every figure is finite. Every catalogued metric (``harness.records.metrics``) is a size, count, rate,
  energy or duration, so it is >= 0. Durations (units ``ms``, ``s``, ``ms/token``) are at most
  ``MAX_DURATION_S`` (a week: longer than any point's timeout; 1e308 ms is a poisoned file, not a slow engine).
- Zero is impossible only where a figure is the harness's own clock over real work (``POSITIVE``): the time
  to the first token, a whole generation, the mean time a token took, and a timed round's first token and
  duration. Engine counters, percentiles of gaps, spreads, energies and bounds may be 0 (a counter's
  resolution, a sensor that did not tick, tokens delivered together).
- A launch's figures obey the same rules; a point's ``metrics.LAUNCH`` figure and its interval's estimate
  are medians of the ok launches' medians, so they lie within those launches' range; an interval's low is
  at most its high (a t interval's low may be negative: it is a bound on a mean, not a duration).
- The gate's divergences (``kl_*``, ``noise_floor``, per-position KL) are >= 0; agreement rates lie in
  [0, 1]; verdict words are typed on the parts themselves (``harness.records.gate_verdicts.Verdict``).
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, Protocol

from harness.records import metric_names
from harness.records import metrics as catalogue
from harness.records.correctness import Correctness
from harness.records.samples import Launch, Samples, TimeSplit

MAX_DURATION_S = 7 * 24 * 3600.0
DURATION_SCALE = {"ms": 1e-3, "s": 1.0, "ms/token": 1e-3}  # unit -> seconds per unit
POSITIVE = frozenset({"ttft_ms", "e2e_ms", "tpot_ms", "ms_per_token_mean"})
if not POSITIVE <= set(catalogue.BY_NAME):  # a renamed metric must not silently lose its rule
    raise RuntimeError(
        f"harness.records.physics: POSITIVE names unknown metrics: {sorted(POSITIVE - set(catalogue.BY_NAME))}"
    )
# Divergences (>= 0) and rates (0..1) anywhere in the gate's parts, by field name.
DIVERGENCES = frozenset(
    {"kl_mean", "kl_max", "noise_floor", "kl_ratio", "position_kl", "position_kl_reverse", "prefill_kl"}
)
RATES = frozenset({"top1_match_rate", "top1_agreement"})
# Slack for medians recomputed from stored (rounded) launch medians.
RANGE_SLACK = 1e-9


def unsafe_component(name: str) -> Optional[str]:
    """Why ``name`` cannot be a path component; None when it can."""
    if not name:
        return "expected a non-empty name"
    if "/" in name or "\\" in name:
        return "expected a name without '/' or '\\' (it names files)"
    if ".." in name:
        return "expected a name without '..' (it names files)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "expected a name without NUL or control characters"
    return None


def _figure(field: str, value: Any, unit: Optional[str] = None, positive: bool = False) -> Optional[str]:
    """Why a figure is impossible; None when it is possible."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # absent, or a type pydantic already judged
    if not math.isfinite(value):
        return f"{field}: expected a finite number, got {value!r}"
    if positive and value <= 0:
        return f"{field}: expected a duration > 0 (real work takes time), got {value!r}"
    if value < 0:
        return f"{field}: expected a value >= 0, got {value!r}"
    scale = DURATION_SCALE.get(unit or "")
    if scale is not None and value * scale > MAX_DURATION_S:
        return f"{field}: expected a duration of at most a week ({MAX_DURATION_S / scale:g} {unit}), got {value!r}"
    return None


def metric_problem(field: str, name: str, value: Any) -> Optional[str]:
    """Why ``value`` cannot be metric ``name`` (named ``field`` in the message); None when it can."""
    known = metric_names.find(name)
    if known is None:  # an engine's own figure: only finiteness is known
        if isinstance(value, float) and not math.isfinite(value):
            return f"{field}: expected a finite number, got {value!r}"
        return None
    return _figure(field, value, known.unit, name in POSITIVE)


class RecordParts(Protocol):
    """The parts of ``harness.records.record.Record`` read here. A protocol, not an import: the record's
    loader calls this module, so importing it back would close a cycle."""

    scenario: str
    point_id: str
    metrics: dict[str, Any]
    samples: Samples
    time_split: Optional[TimeSplit]
    correctness: Optional[Correctness]


def _names(record: RecordParts) -> Iterator[str]:
    for field in ("scenario", "point_id"):
        why = unsafe_component(getattr(record, field))
        if why:
            yield f"{field}: {why}, got {getattr(record, field)!r}"


def _metrics(record: RecordParts) -> Iterator[Optional[str]]:
    for name, value in record.metrics.items():
        yield metric_problem(f"metrics.{name}", name, value)


def _launches(launches: list[Launch]) -> Iterator[Optional[str]]:
    for i, launch in enumerate(launches):
        where = f"samples.launches.{i}"
        for name, value in launch.medians.items():
            yield metric_problem(f"{where}.medians.{name}", name, value)
        yield _figure(f"{where}.wall_s", launch.wall_s, "s")
        yield _figure(f"{where}.rounds", launch.rounds)
        yield _figure(f"{where}.index", launch.index)


def _rounds(record: RecordParts) -> Iterator[Optional[str]]:
    samples = record.samples
    for i, entry in enumerate(samples.rounds):
        where = f"samples.rounds.{i}"
        yield _figure(f"{where}.ttft_s", entry.ttft_s, "s", positive=True)
        yield _figure(f"{where}.e2e_s", entry.e2e_s, "s", positive=True)
        for field in ("prompt_tokens", "batch_size", "launch"):
            yield _figure(f"{where}.{field}", getattr(entry, field))
        yield next((w for j, gap in enumerate(entry.gaps_s) if (w := _figure(f"{where}.gaps_s.{j}", gap, "s"))), None)
    for i, value in enumerate(samples.warmup_s):
        yield _figure(f"samples.warmup_s.{i}", value, "s")
    for name, values in (samples.rounds_ms or {}).items():
        yield next((w for j, v in enumerate(values) if (w := _figure(f"samples.rounds_ms.{name}.{j}", v, "ms"))), None)
    if record.time_split is not None:
        for name, value in record.time_split.model_dump().items():
            yield _figure(f"time_split.{name}", value, "s")


def _ranges(record: RecordParts) -> Iterator[Optional[str]]:
    """A point's launch figures and their intervals against the range of its ok launches' medians."""
    ok = [entry for entry in record.samples.launches if entry.status == "ok"]
    for name in catalogue.LAUNCH:
        values = [float(v) for entry in ok if (v := entry.medians.get(name)) is not None]
        if not values:
            continue
        low, high = min(values), max(values)
        slack = RANGE_SLACK * max(abs(low), abs(high), 1.0)
        interval = record.samples.intervals.get(name)
        for field, value in (
            (f"metrics.{name}", record.metrics.get(name)),
            (f"samples.intervals.{name}.estimate", interval.estimate if interval else None),
        ):
            if value is not None and not low - slack <= value <= high + slack:
                yield (
                    f"{field}: expected a median within its launches' range [{low:g}, {high:g}] "
                    f"(samples.launches.*.medians.{name}), got {value!r}"
                )
    for name, interval in record.samples.intervals.items():
        where = f"samples.intervals.{name}"
        for field in ("estimate", "low", "high", "cv", "within_cv", "between_cv"):
            value = getattr(interval, field)
            if value is not None and not math.isfinite(value):
                yield f"{where}.{field}: expected a finite number, got {value!r}"
        for field in ("cv", "within_cv", "between_cv", "launches", "samples", "rounds_per_launch"):
            yield _figure(f"{where}.{field}", getattr(interval, field))
        if interval.low is not None and interval.high is not None and interval.low > interval.high:
            yield f"{where}: expected low <= high, got low {interval.low!r} and high {interval.high!r}"


def _gate(data: Any, where: str) -> Iterator[Optional[str]]:
    """Divergences >= 0 and rates in [0, 1] anywhere in the gate's (or accuracy's) dumped parts."""
    if isinstance(data, dict):
        for key, value in data.items():
            field = f"{where}.{key}"
            values = value if isinstance(value, list) and key in DIVERGENCES | RATES else [value]
            for j, item in enumerate(values):
                at = field if values is not value else f"{field}.{j}"
                if key in DIVERGENCES:
                    yield _figure(at, item)
                elif key in RATES and isinstance(item, (int, float)) and not isinstance(item, bool):
                    if not (math.isfinite(item) and 0 <= item <= 1):
                        yield f"{at}: expected a rate in [0, 1], got {item!r}"
            if isinstance(value, (dict, list)) and key not in DIVERGENCES | RATES:
                yield from _gate(value, field)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _gate(item, f"{where}.{i}")


def impossible(record: RecordParts) -> Optional[str]:
    """The first impossible value of ``record`` as ``field: expected ..., got ...``; None when all are possible."""
    checks = (
        _names(record),
        _metrics(record),
        _launches(list(record.samples.launches)),
        _rounds(record),
        _ranges(record),
        _gate(record.correctness.model_dump() if record.correctness else None, "correctness"),
    )
    return next((problem for check in checks for problem in check if problem), None)
