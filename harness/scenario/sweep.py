"""Expand a scenario's axes into sweep points with readable, stable ids."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Optional

from harness.errors import ScenarioError
from harness.scenario.schema import AXES, SWEEP_AXES

if TYPE_CHECKING:
    from harness.scenario.schema import Scenario

# Derived from the axes' declarations (harness.scenario.axes): the axes that lead the id bare
# (adapter, device, precision), then axis -> prefix for the rest.
_LEAD = tuple(axis.name for axis in SWEEP_AXES if axis.leads_id)
_ID_PARTS = {axis.name: axis.id_prefix for axis in SWEEP_AXES if axis.id_prefix is not None}
_ID_VALUE = {axis.name: axis.id_value or str for axis in SWEEP_AXES}
_CANONICAL = {axis.name: axis.canonical for axis in SWEEP_AXES if axis.canonical is not None}
ID_ORDER: tuple[str, ...] = (*_LEAD, *_ID_PARTS)  # the axes in the order a point id names them


@dataclass(frozen=True, kw_only=True)
class Point:
    """One sweep point: a value for every axis of ``harness.scenario.schema.AXES`` (defaults as in the schema)."""

    adapter: str
    device: str = "cpu"
    max_seq_len: Optional[int] = None
    quantization: str = "none"
    prompt_len: Optional[int] = None
    beam_width: int = 1
    batch_size: int = 1
    moe_chunk_size: Optional[int] = None
    moe_capacity: Optional[int] = None
    speculative: str = "none"
    id: str = ""

    def axes(self) -> dict:
        data = asdict(self)
        data.pop("id")
        return data


def _check_point_fields() -> None:
    """``Point`` is written out for readers and type checkers; one that drifted from the declared axes
    (a missing field, another default) is refused at import."""
    fields = [field for field in dataclasses.fields(Point) if field.name != "id"]
    declared = [(axis.name, dataclasses.MISSING if axis.required else axis.default) for axis in SWEEP_AXES]
    if [(field.name, field.default) for field in fields] != declared:
        raise TypeError(
            f"harness.scenario.sweep.Point's fields {[(f.name, f.default) for f in fields]} differ from the "
            f"sweep axes declared on harness.scenario.schema.Sweep {declared}: give Point one field per axis, "
            "in the same order, with the same default"
        )


_check_point_fields()


def point_id(
    axes: dict,
    dtype: str,
    explicit: frozenset[str],
    defaults: dict,
    native: Optional[dict[tuple[str, str], str]] = None,
) -> str:
    """``adapter-device-precision`` plus a part for each axis the sweep names or the point changes.

    The precision is the quantization, or at ``none`` what the adapter runs the model at: ``native``
    ((adapter, device) -> precision, e.g. llama.cpp's GGUF file type ``q4_k_m``, OpenVINO's CPU plugin's
    ``f32``) or else the model's ``dtype``.
    Unset (None) values have no part: ``hf-cpu-bf16`` runs a dynamic cache, ``hf-cpu-bf16-seq128`` a
    static one of 128.
    """
    own = (native or {}).get((axes["adapter"], axes["device"])) or dtype
    precision = own if axes["quantization"] == "none" else axes["quantization"]
    parts = [precision if axis == "quantization" else axes[axis] for axis in _LEAD]
    for axis, prefix in _ID_PARTS.items():
        value = axes[axis]
        if value is not None and (axis in explicit or value != defaults[axis]):
            parts.append(f"{prefix}{_ID_VALUE[axis](value)}")
    return "-".join(str(p) for p in parts)


def _matches(axes: dict, pattern: dict) -> bool:
    return all(axes.get(key) == value for key, value in pattern.items())


def _canonical(scenario: Scenario, entries: list[dict], field: str) -> list[dict]:
    """``include``/``exclude`` entries with each value in the form a point holds (an axis a scenario may
    write in several forms: ``prompt_lookup`` for ``prompt_lookup:ngram=2:tokens=10``)."""
    out = []
    for index, entry in enumerate(entries):
        try:
            out.append({k: _CANONICAL[k](v) if k in _CANONICAL else v for k, v in entry.items()})
        except ValueError as exc:
            raise ScenarioError(scenario.path or "<string>", str(exc), field=f"{field}[{index}]") from None
    return out


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

    ``include`` entries fill the axes they omit with each axis's first value. A point listed twice (an
    ``include`` entry equal to a product point) is kept once, in first-seen order; two different points
    with one id raise ``ScenarioError`` (their records would overwrite each other).
    """
    sweep = scenario.sweep
    values = [getattr(sweep, axis) for axis in AXES]
    combos = [dict(zip(AXES, combo)) for combo in itertools.product(*values)]
    excluded = _canonical(scenario, scenario.exclude, "exclude")
    combos = [c for c in combos if not any(_matches(c, pattern) for pattern in excluded)]
    defaults = {axis: getattr(sweep, axis)[0] for axis in AXES}
    combos += [{**defaults, **entry} for entry in _canonical(scenario, scenario.include, "include")]
    points: dict[str, Point] = {}
    for axes in combos:
        pid = point_id(axes, scenario.model.dtype, scenario.explicit_axes, defaults, scenario.native_precision)
        point = Point(**axes, id=pid)
        first = points.setdefault(pid, point)
        if first != point:
            raise _shared_id(scenario, first, point)
    return list(points.values())


def _shared_id(scenario: Scenario, first: Point, second: Point) -> ScenarioError:
    def shown(point: Point) -> str:
        return ", ".join(f"{axis}={value!r}" for axis, value in point.axes().items())

    differ = [axis for axis in AXES if getattr(first, axis) != getattr(second, axis)]
    return ScenarioError(
        scenario.path or "<string>",
        f"two different points get the id {first.id!r}: ({shown(first)}) and ({shown(second)}); they differ in "
        f"{', '.join(differ)}, which the id does not tell apart. Make their text differ (4, not '4', in include), "
        "or, for a new axis, declare its id prefix on its Sweep field (harness/scenario/schema.py)",
        field="sweep",
    )
