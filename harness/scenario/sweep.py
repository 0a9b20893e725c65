"""Expand a scenario's axes into sweep points with readable, stable ids."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Optional

from harness.scenario.schema import AXES

if TYPE_CHECKING:
    from harness.scenario.schema import Scenario

# Axis -> prefix used in point ids (adapter, device and precision always lead the id).
_ID_PARTS = {
    "max_seq_len": "seq",
    "prompt_len": "prompt",
    "beam_width": "beam",
    "batch_size": "bs",
    "moe_chunk_size": "chunk",
    "moe_capacity": "cap",
}


@dataclass(frozen=True, kw_only=True)
class Point:
    """One sweep point: a value for every axis of ``harness.scenario.schema.AXES`` (defaults as in the schema)."""

    adapter: str
    device: str
    max_seq_len: Optional[int] = None
    quantization: str = "none"
    prompt_len: Optional[int] = None
    beam_width: int = 1
    batch_size: int = 1
    moe_chunk_size: Optional[int] = None
    moe_capacity: Optional[int] = None
    id: str = ""

    def axes(self) -> dict:
        data = asdict(self)
        data.pop("id")
        return data


def point_id(axes: dict, dtype: str, explicit: frozenset[str], defaults: dict) -> str:
    """``adapter-device-precision`` plus a part for each axis the sweep names or the point changes.

    Unset (None) values have no part: ``hf-cpu-bf16`` runs a dynamic cache, ``hf-cpu-bf16-seq128`` a
    static one of 128.
    """
    precision = dtype if axes["quantization"] == "none" else axes["quantization"]
    parts = [axes["adapter"], axes["device"], precision]
    for axis, prefix in _ID_PARTS.items():
        value = axes[axis]
        if value is not None and (axis in explicit or value != defaults[axis]):
            parts.append(f"{prefix}{value}")
    return "-".join(str(p) for p in parts)


def _matches(axes: dict, pattern: dict) -> bool:
    return all(axes.get(key) == value for key, value in pattern.items())


DEFAULT_MAX_POINTS = 10_000


def count(scenario: Scenario) -> int:
    """How many points ``expand`` could give at most (the axes' product plus ``include``), computed
    without expanding: a sweep of millions is refused in microseconds (``harness.run.planning``)."""
    total = 1
    for axis in AXES:
        total *= len(getattr(scenario.sweep, axis))
    return total + len(scenario.include)


def expand(scenario: Scenario) -> list[Point]:
    """The product of the sweep's axes, minus ``exclude`` matches, plus ``include`` entries.

    ``include`` entries fill the axes they omit with each axis's first value. Duplicate ids are kept
    once, in first-seen order.
    """
    sweep = scenario.sweep
    values = [getattr(sweep, axis) for axis in AXES]
    combos = [dict(zip(AXES, combo)) for combo in itertools.product(*values)]
    combos = [c for c in combos if not any(_matches(c, pattern) for pattern in scenario.exclude)]
    defaults = {axis: getattr(sweep, axis)[0] for axis in AXES}
    combos += [{**defaults, **entry} for entry in scenario.include]
    points: dict[str, Point] = {}
    for axes in combos:
        pid = point_id(axes, scenario.model.dtype, scenario.explicit_axes, defaults)
        points.setdefault(pid, Point(**axes, id=pid))
    return list(points.values())
