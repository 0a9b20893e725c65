"""What ``harness check`` says about each point before any runs, beyond the schema: the points that will skip
because their adapter cannot take the scenario's model (``Adapter.model_reason``: llama.cpp's converter
missing, or refusing the checkpoint's architecture), found without loading weights."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.adapters import registry
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


def will_skip(scenario: Scenario, points: list[Point], cache_dir: Optional[Path] = None) -> dict[str, str]:
    """point id -> why it will skip, for the points whose adapter refuses the model (one look per adapter);
    ``cache_dir``: the run's ``--cache-dir`` (None: the default), where an adapter keeps what it looked up."""
    reasons: dict[str, str | None] = {}
    for name in dict.fromkeys(point.adapter for point in points):
        reasons[name] = registry.get(name).model_reason(scenario.model, cache_dir)
    return {point.id: reason for point in points if (reason := reasons[point.adapter])}
