"""Load one point's adapter outside a sweep (lm-eval's ``--model harness``): from a scenario file and
point id, or from a model source and the point's axes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.errors import UsageError


@dataclass
class LoadedPoint:
    adapter: object
    tokenizer: object
    eos_ids: list[int]
    name: str


def _point(scenario: Optional[str], point: Optional[str], adapter: str, device: str, quantization: str):
    from harness.run import planning
    from harness.scenario.sweep import Point, expand

    if scenario is None:
        if point is not None:
            raise UsageError("point=… needs scenario=… (the file that defines the point)")
        return None, Point(
            adapter=adapter, device=device, quantization=quantization, id=f"{adapter}-{device}-{quantization}"
        )
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
) -> LoadedPoint:
    from harness.adapters import registry
    from harness.adapters.base import LoadSettings
    from harness.correctness.reference import eos_ids
    from harness.models import sources as models
    from harness.scenario.schema import ModelSpec, QuantizationOptions

    loaded, chosen = _point(scenario, point, adapter, device, quantization)
    if loaded is None and model is None:
        raise UsageError("give scenario=FILE[,point=ID] or model=SOURCE in --model_args")
    spec = loaded.model if loaded is not None else ModelSpec(source=model)
    resolved = models.resolve(spec, models.cache_dir(cache_dir))
    adapter_cls = registry.get(chosen.adapter)
    reason = adapter_cls.supports(chosen)
    if reason:
        raise UsageError(f"{chosen.id}: {reason}")
    settings = LoadSettings(
        dtype=loaded.model.dtype if loaded else dtype,
        threads=int(threads) if threads else (loaded.measurement.threads if loaded else None),
        cache_dir=cache_dir,
        quantization=(loaded.quantization_options if loaded else QuantizationOptions()).model_dump(),
        options=dict(loaded.adapter_options.get(chosen.adapter, {})) if loaded else {},
    )
    engine = adapter_cls()
    engine.load(resolved, chosen, settings)
    tokenizer = resolved.tokenizer()
    return LoadedPoint(engine, tokenizer, eos_ids(resolved, tokenizer), f"{resolved.name}:{chosen.id}")
