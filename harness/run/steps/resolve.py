"""Resolve a point (adapter, model, tokenizer, prompts; skips decided before anything loads) and load it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from harness.adapters import registry
from harness.adapters.base import Adapter, LoadSettings, now_ns
from harness.models import prompts
from harness.models import sources as models
from harness.records.record import ModelInfo
from harness.run.steps.part import Part, Skip
from harness.run.steps.session import Session
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point


@dataclass(frozen=True)
class ResolvedPoint:
    scenario: Scenario
    point: Point
    adapter_cls: type[Adapter]
    model: models.ResolvedModel
    tokenizer: Any
    prompt_ids: list[list[int]]
    settings: LoadSettings

    @property
    def part(self) -> Part:
        model = self.model
        return Part(
            updates={
                "model": ModelInfo(
                    name=model.name,
                    checksum=model.checksum,
                    hf_dir=str(model.hf_dir),
                    gguf=str(model.gguf_path) if model.gguf_path else None,
                )
            }
        )


def skip_reason(point: Point) -> str | None:
    """Why the point's adapter cannot run it here, from class-level checks only (no engine import)."""
    return registry.get(point.adapter).supports(point)


def context_length(hf_dir) -> Optional[int]:
    """The model's context (``max_position_embeddings`` or its aliases in config.json); None if unknown."""
    import json
    from pathlib import Path

    try:
        config = json.loads((Path(hf_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for section in (config, config.get("text_config") or {}):
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = section.get(key) if isinstance(section, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _check_context(prompt_tokens: int, max_new: int, context: Optional[int]) -> None:
    if context is not None and prompt_tokens + max_new > context:
        raise Skip(
            f"prompt ({prompt_tokens} tokens) + max_new_tokens ({max_new}) exceeds the model's context of "
            f"{context} tokens (max_position_embeddings in its config.json)"
        )


def resolve(session: Session, scenario: Scenario, point: Point) -> ResolvedPoint:
    adapter_cls = registry.get(point.adapter)
    reason = adapter_cls.supports(point)
    if reason:
        raise Skip(reason)
    if not session.timing and scenario.gate is None:
        raise Skip("the scenario has no gate section")
    model = session.model(scenario)
    max_new = scenario.generation.max_new_tokens
    context = context_length(model.hf_dir)
    _check_context(point.prompt_len or 0, max_new, context)  # before building a long synthetic prompt
    tokenizer = model.tokenizer()
    if point.prompt_len is not None:
        prompt_ids = prompts.synthetic(tokenizer, point.prompt_len, scenario.synthetic_prompts)
    else:
        prompt_ids = prompts.encode_texts(tokenizer, scenario.prompts)
    longest = max(len(p) for p in prompt_ids)
    _check_context(longest, max_new, context)
    if point.max_seq_len is not None and longest + max_new > point.max_seq_len:
        raise Skip(f"prompt ({longest} tokens) + max_new_tokens ({max_new}) exceeds max_seq_len {point.max_seq_len}")
    settings = LoadSettings(
        dtype=scenario.model.dtype,
        threads=scenario.measurement.threads,
        max_new_tokens=max_new,
        cache_dir=str(session.cache_dir) if session.cache_dir else None,
        quantization=scenario.quantization_options.model_dump(),
        options=dict(scenario.adapter_options.get(point.adapter, {})),
        trust_remote_code=scenario.model.trust_remote_code and session.allow_remote_code,
    )
    return ResolvedPoint(scenario, point, adapter_cls, model, tokenizer, prompt_ids, settings)


@dataclass
class KeptEngine:
    """An engine a persistent worker keeps loaded after a point, for the next point it can serve."""

    adapter: Adapter
    point: Point
    model_key: str
    settings: LoadSettings


def load(resolved: ResolvedPoint, session: Optional[Session] = None) -> tuple[Adapter, Part]:
    """The loaded engine and the load's figures (load time, the adapter's export/compile timings).

    The engine the session kept from the previous point serves this one when the adapter says it can
    (``Adapter.can_serve``) for the same model and load settings; otherwise it is closed first."""
    kept = session.kept_engine if session is not None else None
    if kept is not None:
        session.kept_engine = None
        if (
            kept.model_key == resolved.scenario.model.model_dump_json()
            and kept.settings == resolved.settings
            and type(kept.adapter) is resolved.adapter_cls
            and kept.adapter.can_serve(kept.point, resolved.point, resolved.settings)
        ):
            return kept.adapter, Part(
                metrics={"load_s": None},
                unavailable={
                    "load_s": f"engine reused: loaded once for {kept.point.id}, whose record has the load figures"
                },
            )
        kept.adapter.close()
    adapter = resolved.adapter_cls()
    start = now_ns()
    adapter.load(resolved.model, resolved.point, resolved.settings)
    load_s = (now_ns() - start) / 1e9
    return adapter, Part(metrics={**adapter.load_figures(), "load_s": load_s})


def release(session: Session, resolved: ResolvedPoint, adapter: Adapter, healthy: bool) -> None:
    """After a point: keep the engine for the next point when the session reuses engines and the point
    ended well (an engine that raised may be in any state), else close it."""
    if session.reuse_engines and healthy:
        session.kept_engine = KeptEngine(
            adapter, resolved.point, resolved.scenario.model.model_dump_json(), resolved.settings
        )
    else:
        adapter.close()
