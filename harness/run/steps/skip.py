"""Whether a point runs here, and if not, why: the one skip decision of ``harness run``, its isolated
workers and lm-eval's ``--model harness`` (``harness.run.load_point``).

Two moments, one module: ``skip_reason`` before anything resolves (the runner asks it before it starts a
worker process), ``length_reason`` once the model's context and the prompts' token counts are known.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from harness.adapters import registry
from harness.errors import HarnessError
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

SkipKind = Literal["adapter", "unsupported", "no_gate", "context", "max_seq_len"]


@dataclass(frozen=True)
class SkipReason:
    """Why a point does not run here; ``str()`` is the record's ``reason``."""

    kind: SkipKind  # adapter: unknown or not installed; unsupported: the adapter's own reason; ...
    message: str

    def __str__(self) -> str:
        return self.message


class Skip(Exception):
    """Raised by a step when the point does not run here, decided before the model loads."""

    def __init__(self, reason: SkipReason):
        super().__init__(reason.message)
        self.reason = reason


def skip_reason(scenario: Scenario, point: Point, gate_only: bool = False) -> Optional[SkipReason]:
    """Why ``point`` cannot run here, from class-level checks only (no engine import, no model), or None.

    ``gate_only`` (``harness verify``) runs the gate alone, so a scenario without one has nothing to run."""
    try:
        adapter_cls = registry.get(point.adapter)
    except HarnessError as exc:  # an adapter that vanished since the scenario was checked (a worker's view)
        return SkipReason("adapter", str(exc))
    reason = adapter_cls.supports(point)
    if reason:
        return SkipReason("unsupported", reason)
    if gate_only and scenario.gate is None:
        return SkipReason("no_gate", "the scenario has no gate section")
    return None


def length_reason(point: Point, prompt_tokens: int, max_new: int, context: Optional[int]) -> Optional[SkipReason]:
    """Why a prompt of ``prompt_tokens`` plus ``max_new`` generated tokens does not fit the model's
    ``context`` (None: unknown) or the point's ``max_seq_len``, or None."""
    if context is not None and prompt_tokens + max_new > context:
        return SkipReason(
            "context",
            f"prompt ({prompt_tokens} tokens) + max_new_tokens ({max_new}) exceeds the model's context of "
            f"{context} tokens (max_position_embeddings in its config.json)",
        )
    if point.max_seq_len is not None and prompt_tokens + max_new > point.max_seq_len:
        return SkipReason(
            "max_seq_len",
            f"prompt ({prompt_tokens} tokens) + max_new_tokens ({max_new}) exceeds max_seq_len {point.max_seq_len}",
        )
    return None


def context_length(hf_dir) -> Optional[int]:
    """The model's context (``max_position_embeddings`` or its aliases in config.json); None if unknown."""
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
