"""Resolve a point (adapter, model, tokenizer, prompts, load settings; skips decided before anything loads)
and load it: the one path from (scenario, point, run settings) to a loaded engine, for ``harness run``, its
workers and lm-eval's ``--model harness`` (``harness.run.load_point``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from harness.adapters import registry
from harness.adapters.base import Adapter, LoadSettings
from harness.adapters.trace import now_ns
from harness.models import prompts, sources
from harness.records.record import ModelInfo
from harness.run.settings import RunSettings
from harness.run.steps.caches import Caches
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.skip import Skip, context_length, length_reason, skip_reason
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


@dataclass(frozen=True)
class ResolvedPoint:
    scenario: Scenario
    point: Point
    adapter_cls: type[Adapter]
    model: sources.ResolvedModel
    tokenizer: Any
    prompt_ids: list[list[int]]
    settings: LoadSettings

    @property
    def contribution(self) -> Contribution:
        model = self.model
        return Contribution(
            updates={
                "model": ModelInfo(
                    name=model.name,
                    checksum=model.checksum,
                    hf_dir=str(model.hf_dir),
                    gguf=str(model.gguf_path) if model.gguf_path else None,
                )
            }
        )


def load_settings(
    settings: RunSettings, scenario: Scenario, point: Point, adapter_cls: type[Adapter] | None = None
) -> LoadSettings:
    """What the adapter's ``load`` receives besides the model and the point: the one place a run, a
    worker and lm-eval's ``--model harness`` build it, so all three load the same engine. The scenario's
    ``adapter_options`` for the point's adapter arrive validated as its ``Options`` (the scenario's loader,
    ``harness.run.planning``, has refused any it does not declare)."""
    adapter_cls = adapter_cls or registry.get(point.adapter)
    return LoadSettings(
        dtype=scenario.model.dtype,
        threads=scenario.measurement.threads,
        max_new_tokens=scenario.generation.max_new_tokens,
        cache_dir=str(settings.cache_dir) if settings.cache_dir else None,
        quantization=scenario.quantization_options.model_dump(),
        options=adapter_cls.Options.model_validate(scenario.adapter_options.get(point.adapter, {})),
        trust_remote_code=scenario.model.trust_remote_code and settings.allow_remote_code,
    )


def resolve(ctx: LaunchContext, scenario: Scenario, point: Point) -> ResolvedPoint:
    """Everything a point's load needs (adapter class, model, tokenizer, prompts, load settings); raises
    ``Skip`` when the point does not run here."""
    reason = skip_reason(scenario, point, ctx.settings.correctness_only)
    if reason:
        raise Skip(reason)
    adapter_cls = registry.get(point.adapter)
    model = ctx.caches.model(scenario, ctx.settings.cache_dir)
    max_new = scenario.generation.max_new_tokens
    context = context_length(model.hf_dir)
    reason = length_reason(point, point.prompt_len or 0, max_new, context)  # before building a long prompt
    if reason:
        raise Skip(reason)
    tokenizer = model.tokenizer()
    if point.prompt_len is not None:
        prompt_ids = prompts.synthetic(tokenizer, point.prompt_len, scenario.synthetic_prompts)
    else:
        prompt_ids = prompts.encode_texts(tokenizer, scenario.prompts)
    reason = length_reason(point, max(len(p) for p in prompt_ids), max_new, context)
    if reason:
        raise Skip(reason)
    from dataclasses import replace

    from harness.run.steps.draft import resolve_draft

    draft = resolve_draft(scenario, point, model, tokenizer, ctx.settings.cache_dir)  # None unless it drafts
    settings = replace(load_settings(ctx.settings, scenario, point, adapter_cls), draft=draft)
    return ResolvedPoint(scenario, point, adapter_cls, model, tokenizer, prompt_ids, settings)


@dataclass
class KeptEngine:
    """An engine a persistent worker keeps loaded after a point, for the next point it can serve."""

    adapter: Adapter
    point: Point  # the last point it served
    model_key: str
    settings: LoadSettings
    loaded_for: str  # the point it was loaded for, whose record has the load figures and its first call


@dataclass(frozen=True)
class Loaded:
    """A point's loaded engine, the load's figures (load time, the adapter's export/compile timings) and, for
    an engine kept from an earlier point, the id of the point it was loaded for (whose record has the load
    figures and the first call; the engine is warm)."""

    adapter: Adapter
    contribution: Contribution
    kept_from: Optional[str] = None


def load(resolved: ResolvedPoint, caches: Optional[Caches] = None) -> Loaded:
    """The point's loaded engine (``Loaded``).

    The engine ``caches`` kept from the previous point serves this one when the adapter says it can
    (``Adapter.can_serve``) for the same model and load settings; otherwise it is closed first."""
    kept = caches.kept_engine if caches is not None else None
    if kept is not None:
        caches.kept_engine = None
        if (
            kept.model_key == sources.spec_key(resolved.scenario.model)
            and kept.settings == resolved.settings
            and type(kept.adapter) is resolved.adapter_cls
            and kept.adapter.can_serve(kept.point, resolved.point, resolved.settings)
        ):
            reused = f"engine reused: loaded once for {kept.loaded_for}, whose record has the load figures"
            return Loaded(
                kept.adapter,
                Contribution(metrics={"load_s": None}, unavailable={"load_s": reused}),
                kept_from=kept.loaded_for,
            )
        kept.adapter.close()
    adapter = resolved.adapter_cls()
    start = now_ns()
    adapter.load(resolved.model, resolved.point, resolved.settings)
    load_s = (now_ns() - start) / 1e9
    return Loaded(adapter, Contribution(metrics={**adapter.load_figures(), "load_s": load_s}))


def release(caches: Caches, resolved: ResolvedPoint, loaded: Loaded, healthy: bool) -> None:
    """After a point: keep the engine for the next point when the caches keep engines and the point
    ended well (an engine that raised may be in any state), else close it."""
    if caches.keep_engines and healthy:
        caches.kept_engine = KeptEngine(
            loaded.adapter,
            resolved.point,
            sources.spec_key(resolved.scenario.model),
            resolved.settings,
            loaded_for=loaded.kept_from or resolved.point.id,
        )
    else:
        loaded.adapter.close()
