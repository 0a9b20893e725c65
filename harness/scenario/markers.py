"""A point's markers, as the pytest plugin gives its item: the point's adapter and device and its scenario's
``markers:``, each named by ``marker_name``; and ``-m EXPRESSION`` over them (``harness plan -m nightly``), with
pytest's ``-m`` semantics: words joined by ``and``, ``or``, ``not`` and parentheses, a word holding when the
point carries a marker of exactly that name. Pure: no pytest import (``harness.scenario.selection`` parses)."""

from __future__ import annotations

import re
from typing import Callable

from harness.scenario.schema import Scenario
from harness.scenario.selection import holds, parse
from harness.scenario.sweep import Point


def marker_name(text: str) -> str:
    """A label as a pytest marker name: lower case, anything not a word character an underscore."""
    return re.sub(r"\W", "_", text).lower()


def point_markers(scenario: Scenario, point: Point) -> set[str]:
    """The markers the pytest plugin puts on the point's item."""
    return {marker_name(label) for label in (point.adapter, point.device, *scenario.markers)}


def marker_selector(expression: str) -> Callable[[Scenario, Point], bool]:
    """``(scenario, point) -> kept`` for one ``-m`` expression; a UsageError quoting it when it is none."""
    tree = parse(expression, option="-m")
    return lambda scenario, point: holds(tree, point_markers(scenario, point).__contains__)
