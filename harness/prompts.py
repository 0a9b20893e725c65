"""Prompt token ids: the scenario's texts, or synthetic prompts of exactly N tokens.

Synthetic prompts are cut from the corpus shipped with the project, so the same model, length and
index always give the same tokens; prompt ``i`` starts at a different place in the corpus than
prompt ``i + 1``.
"""

from __future__ import annotations

from harness.tiny import corpus_text


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    return [tokenizer.encode(text).ids for text in texts]


def synthetic(tokenizer, n_tokens: int, count: int) -> list[list[int]]:
    """``count`` prompts of exactly ``n_tokens`` ids each (special prefix tokens included)."""
    prefix = tokenizer.encode("").ids  # e.g. [<bos>] when the tokenizer adds one
    body = _corpus_ids(tokenizer)
    need = n_tokens - len(prefix)
    if need < 0:
        raise ValueError(f"prompt_len {n_tokens} is shorter than the tokenizer's own prefix {prefix}")
    stride = max(1, len(body) // (count + 1))
    prompts = []
    for index in range(count):
        start = index * stride
        ids = [body[(start + i) % len(body)] for i in range(need)]  # wraps around for long prompts
        prompts.append(prefix + ids)
    return prompts


_CORPUS_IDS: dict[int, tuple] = {}


def _corpus_ids(tokenizer) -> tuple[int, ...]:
    # Keyed by identity, holding the tokenizer so the id cannot be reused while cached.
    cached = _CORPUS_IDS.get(id(tokenizer))
    if cached is None:
        ids = tuple(tokenizer.encode(corpus_text(), add_special_tokens=False).ids)
        cached = _CORPUS_IDS[id(tokenizer)] = (tokenizer, ids)
    return cached[1]
