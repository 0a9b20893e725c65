"""GGUF -> HF checkpoint: dequantized weights through transformers, tokenizer rebuilt from the GGUF.

transformers 5.0 rebuilds SentencePiece-style GGUF vocabularies (Gemma, Llama 2) as a Unigram model,
which tokenizes differently from the original ("The capital" -> "The", " c", "ap", ...). For GGUF files
whose ``tokenizer.ggml.model`` is ``llama`` we rebuild the tokenizer ourselves as the BPE that
SentencePiece/llama.cpp run: a merge's priority is the score of the token it produces.
"""

from __future__ import annotations

import re
from pathlib import Path

# Gemma's turn format, for Gemma GGUFs that carry no template of their own (llama.cpp knows it too).
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

# GGUF token types (llama.cpp's llama_token_type)
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6


def _array(reader, name: str, convert):
    field = reader.fields[name]
    return [convert(field.parts[i]) for i in field.data]


def _scalar(reader, name: str, default=None):
    field = reader.fields.get(name)
    if field is None:
        return default
    from gguf import GGUFValueType

    value = field.parts[field.data[0]]
    return bytes(value).decode("utf-8") if field.types[0] == GGUFValueType.STRING else value[0].item()


def spm_tokenizer_from_gguf(reader):
    """A ``tokenizers.Tokenizer`` equivalent to the GGUF's SentencePiece BPE vocabulary."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tokens = _array(reader, "tokenizer.ggml.tokens", lambda p: bytes(p).decode("utf-8"))
    scores = _array(reader, "tokenizer.ggml.scores", lambda p: float(p[0]))
    types = _array(reader, "tokenizer.ggml.token_type", lambda p: int(p[0]))
    mergeable = (_NORMAL, _USER_DEFINED)

    vocab: dict[str, int] = {}
    for i, (token, kind) in enumerate(zip(tokens, types)):
        if kind == _USER_DEFINED and token.strip() == "":
            token = token.replace(" ", "\u2581")  # whitespace runs live in the vocabulary as ▁▁...
        vocab.setdefault(token, i)

    merges = []
    for token, i in vocab.items():
        if types[i] not in mergeable or len(token) < 2:
            continue
        for cut in range(1, len(token)):
            left, right = vocab.get(token[:cut]), vocab.get(token[cut:])
            if left is not None and right is not None and types[left] in mergeable and types[right] in mergeable:
                merges.append((scores[i], i, token[:cut], token[cut:]))
    merges.sort(key=lambda m: (-m[0], m[1]))

    unk_id = _scalar(reader, "tokenizer.ggml.unknown_token_id")
    bpe = models.BPE(
        vocab=vocab,
        merges=[(a, b) for _, _, a, b in merges],
        unk_token=tokens[unk_id] if unk_id is not None else None,
        byte_fallback=True,
        fuse_unk=True,
    )
    tokenizer = Tokenizer(bpe)
    prefix = "\u2581" if _scalar(reader, "tokenizer.ggml.add_space_prefix", False) else ""
    tokenizer.normalizer = normalizers.Sequence(
        ([normalizers.Prepend(prefix)] if prefix else []) + [normalizers.Replace(" ", "\u2581")]
    )
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
        + ([decoders.Strip(" ", 1, 0)] if prefix else [])
    )
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == _CONTROL]
    )
    tokenizer.add_tokens(
        [AddedToken(t, normalized=False) for t, k in zip(tokens, types) if k == _USER_DEFINED and t.strip()]
    )
    # Whitespace runs are matched whole, longest first, before any merge (as SentencePiece and llama.cpp match
    # user-defined pieces): as merges alone, "two  spaces" became "two", "▁", "▁spaces" instead of "two", "▁▁",
    # "spaces". Runs of spaces are isolated by the pre-tokenizer, after normalization made them ▁▁...: as added
    # tokens matched on the normalized text, openvino_tokenizers (which matches added tokens on the raw text)
    # lost them, and as raw-text added tokens it dropped a space from runs of 4, 7, 10... (a byte-offset slip).
    runs = [t for t, k in zip(tokens, types) if k == _USER_DEFINED and t and not t.strip()]
    tokenizer.add_tokens([AddedToken(t, normalized=False) for t in runs if " " not in t])  # newline and tab runs
    spaces = sorted({t.replace(" ", "\u2581") for t in runs if " " in t}, key=len, reverse=True)
    if spaces:
        alternatives = "|".join(re.escape(t) for t in spaces)
        tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(alternatives), "isolated")
    bos_id = _scalar(reader, "tokenizer.ggml.bos_token_id")
    if bos_id is not None and _scalar(reader, "tokenizer.ggml.add_bos_token", True):
        bos = tokens[bos_id]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, bos_id)]
        )
    return tokenizer, {
        "bos_token": tokens[bos_id] if bos_id is not None else None,
        "eos_token": tokens[_scalar(reader, "tokenizer.ggml.eos_token_id")],
        "unk_token": tokens[unk_id] if unk_id is not None else None,
        "pad_token": tokens[_scalar(reader, "tokenizer.ggml.padding_token_id", 0)],
    }


def tokenizer_of(gguf_path: Path):
    """The transformers tokenizer of ``gguf_path`` (its chat template included) that the converted checkpoint
    holds; read from the GGUF's metadata, no weights (``harness check`` asks OpenVINO's converter about it)."""
    from gguf import GGUFReader
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    reader = GGUFReader(str(gguf_path))
    if _scalar(reader, "tokenizer.ggml.model") == "llama":
        raw, special = spm_tokenizer_from_gguf(reader)
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, **special)
    else:  # BPE (gpt2-style) vocabularies convert correctly in transformers
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    template = _scalar(reader, "tokenizer.chat_template")
    if template is None and str(_scalar(reader, "general.architecture", "")).startswith("gemma"):
        template = GEMMA_CHAT_TEMPLATE
    if template:
        tokenizer.chat_template = template
    return tokenizer


def convert(gguf_path: Path, out_dir: Path, dtype: str = "bf16") -> None:
    """Write an HF checkpoint (config, safetensors, tokenizer) for ``gguf_path`` into ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    tokenizer = tokenizer_of(gguf_path)
    # float32 dequantizes exactly; the requested dtype is applied after.
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32)
    model = model.to({"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype])
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
