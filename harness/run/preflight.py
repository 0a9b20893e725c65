"""What ``harness check`` says about each point before any runs, beyond the schema: the points that will skip
because their adapter cannot take the scenario's model (``Adapter.model_reason``: llama.cpp's converter
missing, or refusing the checkpoint's architecture), found without loading weights."""

from __future__ import annotations

from harness.adapters import registry
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


def will_skip(scenario: Scenario, points: list[Point]) -> dict[str, str]:
    """point id -> why it will skip, for the points whose adapter refuses the model (one look per adapter)."""
    reasons: dict[str, str | None] = {}
    for name in dict.fromkeys(point.adapter for point in points):
        reasons[name] = registry.get(name).model_reason(scenario.model)
    return {point.id: reason for point in points if (reason := reasons[point.adapter])}
