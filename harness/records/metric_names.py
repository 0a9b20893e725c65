"""A metric by the name a record stores or a user types: its catalogue entry (``find``, ``get``), an alias
resolved with a suggestion when unknown (``resolve``), units and axis labels."""

from __future__ import annotations

import difflib
from typing import Iterable, Optional

from harness.errors import UsageError
from harness.records.metric_type import Metric
from harness.records.metrics import BY_ALIAS, BY_NAME


def find(name: str) -> Optional[Metric]:
    """The catalogue entry for a metric name, or None (e.g. a third-party engine's own figure)."""
    return BY_NAME.get(name)


def get(name: str) -> Metric:
    metric = BY_NAME.get(name)
    if metric is None:
        raise KeyError(f"{name!r} is not in the metric catalogue (harness/records/metrics.py)")
    return metric


def resolve(user_name: str, what: str = "metric") -> Metric:
    """A name a user typed: an alias (``tpot``) or a metric name (``tpot_ms``). Unknown names are a
    UsageError that lists the aliases and suggests the closest name."""
    metric = BY_ALIAS.get(user_name) or BY_NAME.get(user_name)
    if metric is not None:
        return metric
    close = difflib.get_close_matches(user_name, [*BY_ALIAS, *BY_NAME], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UsageError(
        f"unknown {what} {user_name!r}; {hint}use one of {', '.join(sorted(BY_ALIAS))}, "
        "or a metric name such as tpot_ms"
    )


def units(names: Iterable[str]) -> dict[str, str]:
    """{name: unit} for the catalogued names among ``names``."""
    return {name: BY_NAME[name].unit for name in names if name in BY_NAME}


def label(name: str) -> str:
    """An axis or header label with the unit, e.g. ``next token (ms/token)``; the bare name when unknown."""
    metric = BY_NAME.get(name)
    return metric.axis_label if metric else name
