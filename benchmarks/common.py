"""Shared by the benchmark scripts (run as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

from harness import scenario
from harness.sweep import expand


def single_point(model: str, adapter: str = "hf", max_new_tokens: int = 32, min_rounds: int = 4):
    """A one-point scenario (no file) on ``model``: the scenario and its point."""
    loaded = scenario.loads(
        f"""
model: {model}
prompts: ["The capital of France is"]
generation: {{max_new_tokens: {max_new_tokens}}}
measurement: {{warmup_rounds: 1, min_rounds: {min_rounds}, threads: 2}}
sweep: {{adapter: [{adapter}]}}
""",
        "<benchmark>",
        "bench",
    )
    (point,) = expand(loaded)
    return loaded, point
