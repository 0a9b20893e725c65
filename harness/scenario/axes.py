"""What each sweep axis declares besides its type and default: how a point id names it, and which
adapter capability a non-default value needs.

The facts sit on the axis's own ``Sweep`` field (``harness.scenario.schema``), as
``Annotated[list[...], AxisFacts(...)]``; ``axes_of(Sweep)`` reads them into ``Axis`` objects, and
everything that lists the axes (point ids, ``Point``'s fields, report columns, the adapters' capability
check) derives from those. Adding an axis is one field there, plus its ``Point`` field, which a check at
import compares (``harness.scenario.sweep``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from pydantic import BaseModel
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class Capability:
    """The adapter flag a non-default value of an axis needs, and what to say when an adapter lacks it."""

    flag: str  # a ClassVar[bool] of harness.adapters.base.Adapter, e.g. "supports_beams"
    lacking: str  # completes "<adapter> <lacking> (<axis>=<value>)", e.g. "has no beam search"


@dataclass(frozen=True)
class AxisFacts:
    """Written on a ``Sweep`` field: ``Annotated[list[int], AxisFacts("beam", needs=...)]``."""

    # The part's prefix in point ids ("beam" -> "beam4"); None: the value leads the id bare, as
    # adapter, device and precision do ("hf-cpu-bf16").
    id_prefix: Optional[str]
    needs: Optional[Capability] = None  # None: every adapter runs every value
    # For values a scenario may write in several forms: the one form a point holds (also applied to
    # ``include``/``exclude`` entries), and the value's text in a point id (default: ``str``).
    canonical: Optional[Callable[[Any], Any]] = None
    id_value: Optional[Callable[[Any], str]] = None


@dataclass(frozen=True)
class Axis:
    """One sweep axis, complete: its ``Sweep`` field's name and default plus its ``AxisFacts``."""

    name: str
    id_prefix: Optional[str]
    required: bool  # the sweep must name it (adapter); then ``default`` is None
    default: Any  # the value of a sweep that leaves the axis out: the one every adapter can run
    needs: Optional[Capability]
    canonical: Optional[Callable[[Any], Any]] = None
    id_value: Optional[Callable[[Any], str]] = None

    @property
    def leads_id(self) -> bool:
        return self.id_prefix is None


def axes_of(sweep: type[BaseModel]) -> tuple[Axis, ...]:
    """The axes ``sweep``'s fields declare, in field order. A field without ``AxisFacts``, an empty
    prefix or two axes with one prefix is a programming error, refused here (at import) rather than
    found later as points that share an id."""
    axes = []
    for name, field in sweep.model_fields.items():
        facts = [m for m in field.metadata if isinstance(m, AxisFacts)]
        if len(facts) != 1:
            raise TypeError(
                f"{sweep.__name__}.{name}: declare the axis once, as Annotated[list[...], AxisFacts(id_prefix, ...)] "
                f"(found {len(facts)} AxisFacts); without an id prefix its points would share ids"
            )
        (fact,) = facts
        if fact.id_prefix == "":
            raise TypeError(f"{sweep.__name__}.{name}: id_prefix '' names no part; use a word, or None to lead the id")
        values = field.get_default(call_default_factory=True)
        required = values is PydanticUndefined
        default = None if required else values[0]
        axes.append(Axis(name, fact.id_prefix, required, default, fact.needs, fact.canonical, fact.id_value))
    prefixes = [axis.id_prefix for axis in axes if axis.id_prefix is not None]
    clashing = sorted(
        {p for p in prefixes if prefixes.count(p) > 1 or any(p != q and q.startswith(p) for q in prefixes)}
    )
    if clashing:
        raise TypeError(f"{sweep.__name__}: axes share an id prefix or one starts another: {', '.join(clashing)}")
    return tuple(axes)
