"""The gate at the lengths a point runs: long teacher-forced prompts past the sliding window.

The short gate prompts reach ~50 positions, inside every sliding window; a fault that acts only past a
few hundred positions (window off or mis-sized, a KV cache stored at lower precision, position
encodings losing precision) passes them. A point that sweeps a length (``prompt_len``, ``max_seq_len``)
is therefore also gated on long prompts cut from the shipped long-context texts
(``harness/models/data/long_prompts.json``), at the **gate length**:

- ``gate.length: auto`` (the default): only on points that set ``prompt_len`` or ``max_seq_len``; the
  point's context (``prompt_len + max_new_tokens``, at most ``max_seq_len``), raised to twice the model's
  sliding window (``sliding_window`` in its HF config; none for full-attention models) so whole
  buckets of positions lie past it, and capped by ``max_seq_len`` and the model's
  ``max_position_embeddings``;
- ``gate.length: N``: every point, at N positions (capped the same way);
- ``gate.length: short``: never (the short prompts only).

A point that prefills in chunks (``moe_chunk_size``) also gets long prompts (``gate.length: auto``), at a
length whose ``long-prefill`` head ends in a **partial tail chunk after at least one full chunk**
(``chunk_tail``): the short prompts fit one chunk, so a fault of the tail chunk (positions, masking,
padding) would never run. The tail is half a chunk (``chunk - 1`` for chunks under 16), so the prefill
phase's last positions all lie in it and no verdict rests on one position.

Each long prompt is teacher-forced on its own text: ``long`` prompts prefill a short head and feed the
rest one decode step at a time (every position is compared, so a fault that starts at position N shows
in the position buckets, ``harness.correctness.positions``); ``long-prefill`` prompts prefill all but the
last ``gate.tokens`` positions (the prefill path at length) and feed the rest. ``gate.long_prompts``
prompts alternate the two kinds, ``long`` first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from harness.models.prompts import COPY

LONG = "long"  # short head, every later position one decode step
LONG_PREFILL = "long-prefill"  # prefill up to the last `tokens` positions, then decode steps
KINDS = (LONG, LONG_PREFILL)
HEAD = 16  # positions a `long` prompt prefills before its decode steps


def is_long(kind: str) -> bool:
    """Long prompts are teacher-forced on their own text: no greedy continuation to free-run against."""
    return kind in KINDS


def on_own_text(kind: str) -> bool:
    """Teacher-forced on the prompt's own text (long and copy prompts): its last positions are the text's, not
    the reference's greedy choices, so no free-running, text-path, stopping or beam check runs on it."""
    return is_long(kind) or kind == COPY


@dataclass(frozen=True)
class LengthPlan:
    """The long prompts of one point: ``count`` of them, each ``length`` positions in all."""

    length: int
    count: int
    window: Optional[int]  # the model's sliding window, or None
    why: str  # how the length was chosen, for the log


def model_limits(hf_dir: Path) -> tuple[Optional[int], Optional[int]]:
    """(sliding window, max_position_embeddings) from the model's HF ``config.json`` (a multimodal
    config's ``text_config`` where it has one); a window its config switches off is None."""
    path = Path(hf_dir) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config = config.get("text_config") or config
    window = config.get("sliding_window")
    if config.get("use_sliding_window") is False or not isinstance(window, int) or window <= 0:
        window = None
    limit = config.get("max_position_embeddings")
    return window, limit if isinstance(limit, int) and limit > 0 else None


def chunk_tail(chunk: int) -> int:
    """Positions of the partial chunk a chunked prefill ends in: half a chunk (enough that the prefill
    phase's positions all fall in it), ``chunk - 1`` for small chunks."""
    return chunk // 2 if chunk >= 16 else max(1, chunk - 1)


def fit_chunks(length: int, chunk: int, tokens: int) -> int:
    """``length`` moved so that a ``long-prefill`` prompt's head (``length - tokens`` positions) is at least one
    full chunk plus a partial tail of at least ``chunk_tail(chunk)`` positions: a head shorter than that is
    raised to it; a longer one ending too near a chunk boundary is lowered (never past the point's context,
    which an engine may size its KV cache by) to one chunk fewer and a tail."""
    tail = chunk_tail(chunk)
    head = max(length - tokens, 0)
    if head < chunk + tail:
        return chunk + tail + tokens
    rest = head % chunk
    return length if rest >= tail else length - rest - chunk + tail


def plan(
    setting,
    count: int,
    prompt_len: Optional[int],
    max_seq_len: Optional[int],
    max_new_tokens: int,
    hf_dir: Path,
    chunk: Optional[int] = None,
    tokens: int = 32,
) -> Optional[LengthPlan]:
    """The point's long prompts from ``gate.length`` (``setting``), or None when it has none. ``chunk``: the
    point's prefill chunk (``moe_chunk_size``), ``tokens``: the gate's teacher-forced tokens per prompt."""
    if setting == "short":
        return None
    window, limit = model_limits(hf_dir)
    caps = [c for c in (max_seq_len, limit) if c is not None]
    cap = min(caps) if caps else None
    if isinstance(setting, int) and not isinstance(setting, bool):
        length, why = setting, f"gate.length {setting}"
    elif prompt_len is None and max_seq_len is None:
        if not chunk:
            return None  # auto: the point runs the short prompts' lengths only
        length = fit_chunks(0, chunk, tokens)
        why = f"one prefill chunk of {chunk} and a tail of {chunk_tail(chunk)} before {tokens} teacher-forced tokens"
    else:
        context = (prompt_len or 0) + max_new_tokens
        if max_seq_len is not None:
            context = min(context, max_seq_len)
        length, why = context, f"the point's context {context}"
        if window is not None and 2 * window > context:
            length, why = 2 * window, f"twice the sliding window {window} (the point's context is {context})"
    if chunk and setting == "auto" and (prompt_len is not None or max_seq_len is not None):
        fitted = fit_chunks(length, chunk, tokens)
        if fitted != length:
            length, why = fitted, f"{why}, moved to {fitted} so the prefill ends in a partial chunk of {chunk}"
    if cap is not None and length > cap:
        length, why = cap, f"{why}, capped at {cap}"
    return LengthPlan(length=length, count=count, window=window, why=why)


def long_texts() -> list[str]:
    path = Path(__file__).parents[1] / "models" / "data" / "long_prompts.json"
    return json.loads(path.read_text(encoding="utf-8"))["texts"]


def pairs(count: int) -> list[tuple[str, str]]:
    """(kind, text) of ``count`` long prompts: kinds alternate, texts cycle through the shipped set."""
    texts = long_texts()
    return [(KINDS[i % 2], texts[i % len(texts)]) for i in range(count)]


def encode(tokenizer, text: str, length: int) -> list[int]:
    """Exactly ``length`` ids of ``text`` (with the tokenizer's own prefix), the text repeated when short."""
    ids = list(tokenizer.encode(text).ids)
    body = tokenizer.encode(text, add_special_tokens=False).ids
    if not body:
        raise ValueError("a long gate prompt encodes to no tokens")
    while len(ids) < length:
        ids += body
    return ids[:length]


def head(kind: str, length: int, tokens: int) -> int:
    """Positions prefilled before the teacher-forced decode steps (at least 1, at most length - 1)."""
    wanted = HEAD if kind == LONG else length - tokens
    return max(1, min(wanted, length - 1))


def split(kind: str, ids: Sequence[int], tokens: int) -> tuple[list[int], list[int]]:
    """(prefilled head, teacher-forced tokens) of a long or copy prompt's ids (a copy prompt's last ``tokens``
    positions are teacher-forced, as a ``long-prefill`` prompt's)."""
    cut = head(LONG_PREFILL if kind == COPY else kind, len(ids), tokens)
    return list(ids[:cut]), list(ids[cut:])
