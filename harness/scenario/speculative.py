"""The ``speculative`` sweep axis: its values, as a scenario writes them and as a point holds them.

A scenario writes each value as ``none``, ``prompt_lookup`` (``{prompt_lookup: {ngram: 2, tokens: 10}}`` to
set the n-gram and candidate sizes) or ``{draft: SOURCE, tokens: 5, quantization: int4_sym}`` (a draft model,
resolved like ``model.source``; ``source: target``, the default, drafts with the target itself at
``quantization``). A point holds the canonical text of the value (``canonical``), so the value is part of its
settings, its id and every key derived from them; ``parse`` turns that text back into a ``Speculation``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

NONE = "none"
PROMPT_LOOKUP = "prompt_lookup"
DRAFT = "draft"
TARGET = "target"  # a draft source: the scenario's own model (at the draft's quantization)
DEFAULT_NGRAM = 2  # transformers' max_matching_ngram_size and llama-cpp-python's max_ngram_size default
DEFAULT_LOOKUP_TOKENS = 10  # both engines' default candidate count
DEFAULT_DRAFT_TOKENS = 5
MAX_DRAFT_TOKENS = 64
_QUANTIZATIONS = ("none", "int8_sym", "int8_asym", "int4_sym", "int4_asym")  # harness.scenario.schema's levels


@dataclass(frozen=True)
class Speculation:
    """One value of the axis. ``tokens``: candidates per verify step (prompt lookup) or draft tokens
    (a draft model); ``ngram``: the longest n-gram prompt lookup matches."""

    kind: str  # none | prompt_lookup | draft
    tokens: int = 0
    ngram: int = 0
    source: Optional[str] = None  # draft only: a model source, or "target"
    quantization: str = "none"  # draft only

    @property
    def enabled(self) -> bool:
        return self.kind != NONE


_LOOKUP = re.compile(r"^prompt_lookup:ngram=(\d+):tokens=(\d+)$")
_DRAFT = re.compile(r"^draft:tokens=(\d+):quantization=([a-z0-9_]+):source=(.+)$")


def canonical(value: Any) -> str:
    """The text a point holds for a value as a scenario writes it; raises ``ValueError`` saying what was
    expected."""
    if isinstance(value, str):
        if value in (NONE, PROMPT_LOOKUP):
            return NONE if value == NONE else _lookup_text(DEFAULT_NGRAM, DEFAULT_LOOKUP_TOKENS)
        if _LOOKUP.match(value) or _DRAFT.match(value):
            return text(parse(value))
        raise ValueError(f"expected none, prompt_lookup or {{draft: SOURCE, tokens: N}}, got {value!r}")
    if isinstance(value, dict) and set(value) == {PROMPT_LOOKUP}:
        sizes = value[PROMPT_LOOKUP] or {}
        _only(sizes, {"ngram", "tokens"}, PROMPT_LOOKUP)
        ngram = _count(sizes.get("ngram", DEFAULT_NGRAM), "prompt_lookup.ngram")
        return _lookup_text(ngram, _count(sizes.get("tokens", DEFAULT_LOOKUP_TOKENS), "prompt_lookup.tokens"))
    if isinstance(value, dict) and DRAFT in value:
        _only(value, {DRAFT, "tokens", "quantization"}, DRAFT)
        source = value[DRAFT]
        if isinstance(source, dict):  # {draft: {source: ..., tokens: ..., quantization: ...}}
            _only(source, {"source", "tokens", "quantization"}, DRAFT)
            value = {**value, **source}
            source = source.get("source", TARGET)
        if not isinstance(source, str) or not source:
            raise ValueError(f"draft: expected a model source (a built-in name, a directory, a .gguf), got {source!r}")
        quantization = value.get("quantization", "none")
        if quantization not in _QUANTIZATIONS:
            raise ValueError(f"draft.quantization: expected one of {', '.join(_QUANTIZATIONS)}, got {quantization!r}")
        tokens = _count(value.get("tokens", DEFAULT_DRAFT_TOKENS), "draft.tokens")
        return text(Speculation(DRAFT, tokens=tokens, source=source, quantization=quantization))
    raise ValueError(f"expected none, prompt_lookup or {{draft: SOURCE, tokens: N}}, got {value!r}")


def parse(value: str) -> Speculation:
    """The ``Speculation`` a point's canonical text names."""
    if value == NONE:
        return Speculation(NONE)
    if found := _LOOKUP.match(value):
        return Speculation(PROMPT_LOOKUP, tokens=int(found[2]), ngram=int(found[1]))
    if found := _DRAFT.match(value):
        return Speculation(DRAFT, tokens=int(found[1]), source=found[3], quantization=found[2])
    raise ValueError(f"speculative: {value!r} is not a canonical value (see harness.scenario.speculative)")


def text(spec: Speculation) -> str:
    if spec.kind == PROMPT_LOOKUP:
        return _lookup_text(spec.ngram, spec.tokens)
    if spec.kind == DRAFT:
        return f"draft:tokens={spec.tokens}:quantization={spec.quantization}:source={spec.source}"
    return NONE


def id_part(value: str) -> str:
    """The value's part of a point id (after the axis's ``spec-`` prefix): ``none``, ``lookup2x10``,
    ``draft5-target-int4_sym``; a draft's source by its file or directory name."""
    spec = parse(value)
    if spec.kind == PROMPT_LOOKUP:
        return f"lookup{spec.ngram}x{spec.tokens}"
    if spec.kind == DRAFT:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", (spec.source or TARGET).rstrip("/").rsplit("/", 1)[-1])
        name = name.removesuffix(".gguf")
        return f"draft{spec.tokens}-{name}" + ("" if spec.quantization == "none" else f"-{spec.quantization}")
    return NONE


def _lookup_text(ngram: int, tokens: int) -> str:
    return f"prompt_lookup:ngram={ngram}:tokens={tokens}"


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DRAFT_TOKENS:
        raise ValueError(f"{field}: expected a whole number 1..{MAX_DRAFT_TOKENS}, got {value!r}")
    return value


def _only(mapping: Any, allowed: set[str], what: str) -> None:
    if not isinstance(mapping, dict):
        raise ValueError(f"{what}: expected a mapping of {', '.join(sorted(allowed))}, got {mapping!r}")
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise ValueError(f"{what}: unknown key {unknown[0]!r} (expected {', '.join(sorted(allowed))})")
