"""What ``harness check`` says about each point before any runs, beyond the schema, found without loading
weights: the points that will skip because their adapter cannot take the scenario's model
(``Adapter.model_reason``: llama.cpp's converter missing, or refusing the checkpoint's architecture), the points
that will fail while they prepare (``Adapter.model_failure``: transformers not knowing the architecture, a
tokenizer OpenVINO's converter refuses), and the scenarios refused outright because every point's HF reference
would fail (a ``model_type`` transformers does not know, with a gate or accuracy to compute)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.adapters import registry
from harness.errors import ScenarioError
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


def will_skip(scenario: Scenario, points: list[Point], cache_dir: Optional[Path] = None) -> dict[str, str]:
    """point id -> why it will skip, for the points whose adapter refuses the model (one look per adapter);
    ``cache_dir``: the run's ``--cache-dir`` (None: the default), where an adapter keeps what it looked up."""
    reasons: dict[str, str | None] = {}
    for name in dict.fromkeys(point.adapter for point in points):
        reasons[name] = registry.get(name).model_reason(scenario.model, cache_dir)
    return {point.id: reason for point in points if (reason := reasons[point.adapter])}


def will_fail(scenario: Scenario, points: list[Point], cache_dir: Optional[Path] = None) -> dict[str, str]:
    """point id -> the one line its preparation will fail with, for the points whose adapter predicts it (one
    look per adapter)."""
    reasons: dict[str, str | None] = {}
    for name in dict.fromkeys(point.adapter for point in points):
        reasons[name] = registry.get(name).model_failure(scenario.model, cache_dir)
    return {point.id: reason for point in points if (reason := reasons[point.adapter])}


def refusal(scenario: Scenario) -> Optional[ScenarioError]:
    """The scenario refused when its gate or accuracy needs the HF reference (transformers on the checkpoint,
    for every point) and transformers does not know the checkpoint's ``model_type``: nothing it runs could be
    judged."""
    from harness.models import transformers_check

    if scenario.gate is None and scenario.accuracy is None:
        return None
    unknown = transformers_check.unknown_model_type(scenario.model)
    if unknown is None:
        return None
    config, what = unknown
    return ScenarioError(
        scenario.path or "<string>",
        f"{config}: HF reference (transformers) would fail for every point (the gate and accuracy compare against "
        f"transformers on this checkpoint): {what}; {transformers_check.advice(scenario.model)}",
        field="model.source",
    )
