"""Prompt token ids: the scenario's texts, or synthetic prompts of exactly N tokens.

Synthetic prompts are cut from the corpus shipped with the project, so the same model, length and
index always give the same tokens; prompt ``i`` starts at a different place in the corpus than
prompt ``i + 1``.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.models.tiny import corpus_text


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


# --- the gate's prompt set --------------------------------------------------------------------


def tokenizer_corpus() -> list[str]:
    """The shipped tricky strings the text-path check tokenizes with both tokenizers."""
    path = Path(__file__).parent / "data" / "tokenizer_corpus.json"
    return json.loads(path.read_text(encoding="utf-8"))["strings"]


def gate_prompt_set() -> dict[str, list[str]]:
    """The project's own prompts for the correctness gate: 8 plain-text starters and 8 chat requests."""
    path = Path(__file__).parent / "data" / "gate_prompts.json"
    return json.loads(path.read_text(encoding="utf-8"))


def select_gate_prompts(selection) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``"ci"`` (one plain, one chat), ``"all"`` (16), an int n, or a list of texts."""
    prompt_set = gate_prompt_set()
    interleaved = [
        pair
        for pairs in zip(prompt_set["plain"], prompt_set["chat"])
        for pair in (("plain", pairs[0]), ("chat", pairs[1]))
    ]
    if selection == "ci":
        return interleaved[:2]
    if selection == "all":
        return [("plain", t) for t in prompt_set["plain"]] + [("chat", t) for t in prompt_set["chat"]]
    if isinstance(selection, int):
        return interleaved[:selection]
    return [("plain", text) for text in selection]


DIALOGUE = "dialogue"  # a conversation (JSON list of messages) through the chat template: the stop prompts


def stop_prompts() -> list[tuple[str, str]]:
    """(kind, text) of the shipped stop prompts (``gate_prompts.json`` ``stop``): short answers after two
    answered examples, so the reference ends its turn well inside the budget, a base model's too (it follows
    the pattern). Each text is its conversation as JSON (one key for the stored reference)."""
    return [(DIALOGUE, json.dumps(messages, ensure_ascii=False)) for messages in gate_prompt_set()["stop"]]


COPY = "copy"  # a copy-fidelity prompt: teacher-forced on its own text, whose end copies spans of its start


def copy_prompts(count: int) -> list[tuple[str, str]]:
    """(kind, text) of the first ``count`` shipped copy-fidelity prompts (``gate_prompts.json`` ``copy``):
    serial numbers, an order, coordinates, a stock list, a JSON record (each written twice, so the second copy's
    digits are what its last positions predict) and a function whose call copies its identifiers; densest in
    digits first, each under 64 tokens of a small tokenizer."""
    texts = gate_prompt_set()["copy"]
    if count > len(texts):
        raise ValueError(f"gate.copy_prompts {count}: {len(texts)} copy prompts are shipped")
    return [(COPY, text) for text in texts[:count]]


def chat_template(hf_dir: Path) -> str | None:
    """The checkpoint's chat template: ``chat_template.jinja`` (transformers 5) or tokenizer_config.json."""
    jinja = Path(hf_dir) / "chat_template.jinja"
    if jinja.exists():
        return jinja.read_text(encoding="utf-8")
    config = Path(hf_dir) / "tokenizer_config.json"
    if config.exists():
        return json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    return None


def encode_gate_prompts(tokenizer, hf_dir: Path, pairs: list[tuple[str, str]]) -> list[list[int]]:
    """Token ids per prompt; chat prompts and dialogues go through the tokenizer's chat template where it has one."""
    template = chat_template(hf_dir)
    encoded = []
    for kind, text in pairs:
        if kind == "chat" and template:
            rendered = render_chat(template, tokenizer, text)
            encoded.append(tokenizer.encode(rendered, add_special_tokens=False).ids)
        elif kind == DIALOGUE:  # without a template, the turns as plain lines
            messages = json.loads(text)
            if template:
                rendered = render_messages(template, tokenizer, messages)
                encoded.append(tokenizer.encode(rendered, add_special_tokens=False).ids)
            else:
                lines = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
                encoded.append(tokenizer.encode(f"{lines}\nassistant:").ids)
        else:
            encoded.append(tokenizer.encode(text).ids)
    return encoded


def render_chat(template: str, tokenizer, text: str) -> str:
    return render_messages(template, tokenizer, [{"role": "user", "content": text}])


def render_messages(template: str, tokenizer, messages: list[dict]) -> str:
    """``messages`` through the checkpoint's chat template, with the generation prompt (the reference's
    rendering: the text-path check compares an engine's own chat path with it)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    prefix = tokenizer.encode("").tokens  # the special prefix the post-processor adds, e.g. <bos>
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=messages,
        add_generation_prompt=True,
        bos_token=prefix[0] if prefix else "",
        eos_token="",
    )
