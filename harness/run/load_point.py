"""Load one point's adapter outside a sweep (lm-eval's ``--model harness``): from a scenario file and
point id, or from a model source and the point's axes (a one-point scenario).

The point resolves, skips and loads through ``harness.run.steps.resolve``, the code ``harness run`` and its
workers run, so lm-eval scores the engine ``harness run`` times (same load settings, same skip reasons)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.errors import UsageError
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


@dataclass
class LoadedPoint:
    adapter: object
    tokenizer: object
    eos_ids: list[int]
    name: str


def _from_file(scenario: str, point: Optional[str]) -> tuple[Scenario, Point]:
    from harness.run import planning
    from harness.scenario.sweep import expand

    loaded = planning.load(scenario)
    points = expand(loaded)
    if point is None:
        if len(points) != 1:
            raise UsageError(
                f"{scenario} has {len(points)} points; name one with point=ID ({', '.join(p.id for p in points)})"
            )
        return loaded, points[0]
    for candidate in points:
        if candidate.id == point:
            return loaded, candidate
    raise UsageError(f"{scenario} has no point {point!r}; its points: {', '.join(p.id for p in points)}")


def _one_point(model: str, adapter: str, device: str, quantization: str, dtype: str) -> tuple[Scenario, Point]:
    """``model=SOURCE,adapter=…`` without a scenario: the one-point scenario those arguments describe."""
    from pydantic import ValidationError

    from harness.records.record import describe_errors

    try:
        scenario = Scenario.model_validate(
            {
                "name": "model_args",
                "model": {"source": model, "dtype": dtype},
                "sweep": {"adapter": [adapter], "device": [device], "quantization": [quantization]},
            }
        )
    except ValidationError as exc:
        raise UsageError(describe_errors(exc, "--model_args")) from None
    # The id lm-eval has always named this point by (its model name keys lm-eval's request cache).
    return scenario, Point(
        adapter=adapter, device=device, quantization=quantization, id=f"{adapter}-{device}-{quantization}"
    )


def _with_threads(scenario: Scenario, threads: Optional[int]) -> Scenario:
    if not threads:
        return scenario
    measurement = scenario.measurement.model_copy(update={"threads": int(threads)})
    return scenario.model_copy(update={"measurement": measurement})


def load_point(
    scenario: Optional[str] = None,
    point: Optional[str] = None,
    model: Optional[str] = None,
    adapter: str = "hf",
    device: str = "cpu",
    quantization: str = "none",
    dtype: str = "bf16",
    threads: Optional[int] = None,
    cache_dir: Optional[str] = None,
    trust_remote_code: bool = False,
) -> LoadedPoint:
    """The point's loaded engine. ``threads`` overrides the scenario's ``measurement.threads``;
    ``trust_remote_code`` is the confirmation a scenario's ``model.trust_remote_code`` needs (as
    ``--trust-remote-code`` is for ``harness run``; lm-eval's ``--trust_remote_code`` passes it). A point
    that ``harness run`` would skip is a ``UsageError`` naming the same reason."""
    from harness.adapters.base import PointSkipped
    from harness.correctness.reference import eos_ids
    from harness.run.settings import RunSettings
    from harness.run.steps import resolve
    from harness.run.steps.launch_context import LaunchContext
    from harness.run.steps.skip import Skip

    if scenario is not None:
        chosen_scenario, chosen = _from_file(scenario, point)
    elif point is not None:
        raise UsageError("point=… needs scenario=… (the file that defines the point)")
    elif model is None:
        raise UsageError("give scenario=FILE[,point=ID] or model=SOURCE in --model_args")
    else:
        chosen_scenario, chosen = _one_point(model, adapter, device, quantization, dtype)
    chosen_scenario = _with_threads(chosen_scenario, threads)
    if chosen_scenario.model.trust_remote_code and not trust_remote_code:
        raise UsageError(
            f"{scenario}: model.trust_remote_code: true runs code shipped with the model; confirm with "
            "trust_remote_code=True in --model_args (lm_eval: --trust_remote_code)"
        )
    settings = RunSettings(cache_dir=Path(cache_dir) if cache_dir else None, allow_remote_code=bool(trust_remote_code))
    try:
        resolved = resolve.resolve(LaunchContext(settings), chosen_scenario, chosen)
        engine = resolve.load(resolved).adapter
    except (Skip, PointSkipped) as skip:
        raise UsageError(f"{chosen.id}: {skip}") from None
    tokenizer = resolved.tokenizer
    return LoadedPoint(engine, tokenizer, eos_ids(resolved.model, tokenizer), resolved.model.engine_name(chosen.id))
