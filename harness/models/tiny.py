"""Tiny seeded random models, built locally for fast tests (no download, a few seconds to build).

A tiny model is a real transformers checkpoint of a real architecture with a byte-level BPE tokenizer
trained on the project's corpus; only its size and its (seeded) weights are made up.
"""

from __future__ import annotations

import json
from pathlib import Path

TOKENIZER_VOCAB = 512
SPECIAL = ["<pad>", "<bos>", "<eos>", "<unk>"]

_COMMON = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=8192,
    initializer_range=0.2,  # peaked distributions, so greedy decoding is not a coin toss between ties
    tie_word_embeddings=False,
)

ARCHITECTURES: dict[str, dict] = {
    "llama": dict(model_type="llama", **_COMMON),
    "qwen2": dict(model_type="qwen2", **_COMMON),
    # Attention scaled by head_dim ** -0.5, as in every published Gemma 3 (transformers' default scalar, 256,
    # is what llama.cpp's Gemma 3 graph does not read: it scales by head_dim, and the gate fails it).
    "gemma3_text": dict(model_type="gemma3_text", head_dim=16, query_pre_attn_scalar=16, sliding_window=32, **_COMMON),
    # Every layer attends over a 64-token sliding window: "long" is a few hundred positions (the gate's
    # long-context faults, tests/faults_long.py).
    "mistral": dict(model_type="mistral", sliding_window=64, **_COMMON),
    "phi3": dict(model_type="phi3", **_COMMON),  # fused qkv and gate/up projections
    # Mixture-of-experts families (routing statistics, capacity studies): 8 experts, top-2.
    "qwen2_moe": dict(
        model_type="qwen2_moe",
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=32,
        **_COMMON,
    ),
    "mixtral": dict(model_type="mixtral", num_local_experts=8, num_experts_per_tok=2, **_COMMON),
    "olmoe": dict(model_type="olmoe", num_experts=8, num_experts_per_tok=2, **_COMMON),
}


# Phi-4's layout for the byte-level BPE tokenizer: llama.cpp's converter reads a Phi-3 vocabulary from a
# SentencePiece tokenizer.model unless tokenizer_config.json names GPT-2's tokenizer class.
TOKENIZER_CLASS = {"phi3": "GPT2Tokenizer"}
# Phi-3's special tokens, (text, strips the whitespace after it): llama.cpp 0.3.36 gives every special token of
# a model named phi3/phi-3 that right-strip except <s>, <unk> and <|endoftext|> (as Phi-3's tokenizer.json has
# it), and fails to load one whose vocabulary lacks </s>, <s>, <unk> or <|endoftext|> ("unordered_map::at").
EXTRA_SPECIAL = {
    "phi3": [
        ("<pad>", True),
        ("<bos>", True),
        ("<eos>", True),
        ("</s>", True),
        ("<s>", False),
        ("<|endoftext|>", False),
    ]
}


def tokenizer_recipe(arch: str) -> dict:
    """The tokenizer's per-architecture changes, for the recipe a tiny model is keyed by ({} where none)."""
    changes = {"class": TOKENIZER_CLASS.get(arch), "special": EXTRA_SPECIAL.get(arch)}
    changes = {key: value for key, value in changes.items() if value}
    return {"tokenizer": changes} if changes else {}


def corpus_text() -> str:
    return (Path(__file__).parent / "data" / "corpus.txt").read_text(encoding="utf-8")


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TOKENIZER_VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus_text().splitlines(), trainer=trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", tokenizer.token_to_id("<bos>"))]
    )
    return tokenizer


def build(arch: str, seed: int, out_dir: Path) -> None:
    """Write a tiny random checkpoint of ``arch`` (weights drawn with ``seed``) into ``out_dir``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    raw = build_tokenizer()
    from tokenizers import AddedToken

    extra = EXTRA_SPECIAL.get(arch, [])
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False, rstrip=strip) for t, strip in extra])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
    spec = dict(ARCHITECTURES[arch])
    config = AutoConfig.for_model(
        spec.pop("model_type"),
        vocab_size=raw.get_vocab_size(),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **spec,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    if arch in TOKENIZER_CLASS:
        path = Path(out_dir) / "tokenizer_config.json"
        tokenizer_config = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**tokenizer_config, "tokenizer_class": TOKENIZER_CLASS[arch]}, indent=2))
