"""A speculative point's draft model, resolved like ``model.source`` (a built-in or tiny name, a checkpoint
directory, a GGUF) or the target itself (``source: target``), and checked to share the target's tokenizer:
a draft proposes token ids, which mean nothing to a target with another vocabulary."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.errors import ScenarioError
from harness.models import sources
from harness.scenario.schema import ModelSpec, Scenario
from harness.scenario.speculative import DRAFT, TARGET, parse
from harness.scenario.sweep import Point


def resolve_draft(
    scenario: Scenario, point: Point, model: sources.ResolvedModel, tokenizer, cache: Optional[Path]
) -> Optional[sources.ResolvedModel]:
    """The point's draft model, or None when it drafts with no model (none, prompt lookup). Raises
    ``ScenarioError`` (one line) when the draft's tokenizer is not the target's."""
    spec = parse(point.speculative)
    if spec.kind != DRAFT:
        return None
    if spec.source == TARGET:
        return model
    draft = sources.resolve(ModelSpec(source=spec.source, dtype=scenario.model.dtype, seed=scenario.model.seed), cache)
    theirs, ours = draft.tokenizer().get_vocab(with_added_tokens=True), tokenizer.get_vocab(with_added_tokens=True)
    if theirs != ours:
        differing = sum(1 for token, index in ours.items() if theirs.get(token) != index) + max(
            0, len(theirs) - len(ours)
        )
        raise ScenarioError(
            scenario.path or "<string>",
            f"the draft {spec.source} does not share the target's tokenizer ({len(theirs)} vs {len(ours)} "
            f"entries, {differing} differ): speculative decoding needs the target's vocabulary",
            field="sweep.speculative",
        )
    return draft
