"""Write a Llama-family HF checkpoint as a GGUF file (F32 or F16), so llama.cpp runs the tiny test
models and its quantizer has a full-precision source. Llama and Mixtral (Llama with routed experts);
the layout follows llama.cpp's own converter (Q/K rows permuted from HF's half-split RoPE to
interleaved pairs, each layer's experts stacked into one 3-D tensor per projection).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.io import per_file

SUPPORTED = ("llama", "mixtral")
VERSION = 2  # in the cached file's name: 2 writes the pre-tokenizer and the chat template
_EXPERT_PROJECTIONS = {"w1": "FFN_GATE_EXP", "w3": "FFN_UP_EXP", "w2": "FFN_DOWN_EXP"}  # HF Mixtral names


def _stack_experts(weights: dict, n_layers: int, n_experts: int) -> dict:
    """Replace ``...block_sparse_moe.experts.E.wN.weight`` with one [experts, rows, cols] array per
    layer and projection, under its GGUF name; the router becomes ``ffn_gate_inp``."""
    import gguf
    import numpy as np

    out = {}
    for layer in range(n_layers):
        prefix = f"model.layers.{layer}.block_sparse_moe"
        for hf, kind in _EXPERT_PROJECTIONS.items():
            name = gguf.TENSOR_NAMES[getattr(gguf.MODEL_TENSOR, kind)].format(bid=layer) + ".weight"
            out[name] = np.stack([weights.pop(f"{prefix}.experts.{e}.{hf}.weight") for e in range(n_experts)])
        out[gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.FFN_GATE_INP].format(bid=layer) + ".weight"] = weights.pop(
            f"{prefix}.gate.weight"
        )
    return out


def _permute(weights, n_head: int):
    """HF rotates halves of each head; llama.cpp's Llama graph rotates adjacent pairs."""
    rows = weights.shape[0]
    return weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def _tokenizer_fields(writer, hf_dir: Path, config: dict) -> None:
    import gguf

    data = json.loads((hf_dir / "tokenizer.json").read_text(encoding="utf-8"))
    if data["model"]["type"] != "BPE":
        raise ValueError(f"{hf_dir}: only byte-level BPE tokenizers are exported (got {data['model']['type']})")
    vocab = data["model"]["vocab"]
    special = {t["id"] for t in data.get("added_tokens", []) if t.get("special")}
    tokens = [None] * len(vocab)
    for text, index in vocab.items():
        tokens[index] = text
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(_pre_tokenizer(data.get("pre_tokenizer")))
    writer.add_token_list(tokens)
    writer.add_token_types(
        [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(len(tokens))]
    )
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]])
    for name, key in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("pad", "pad_token_id")):
        if config.get(key) is not None:
            getattr(writer, f"add_{name}_token_id")(int(config[key]))
    writer.add_add_bos_token(True)
    from harness.models.prompts import chat_template

    template = chat_template(hf_dir)
    if template:  # without it llama-cpp-python's chat API falls back to the llama-2 format
        writer.add_chat_template(template)


def _pre_tokenizer(spec: dict | None) -> str:
    """llama.cpp's name for the checkpoint's pre-tokenizer: a byte-level split with GPT-2's regex is
    ``gpt-2`` (``default`` is llama.cpp's own split, which cuts digits in threes and punctuation apart)."""
    parts = (spec.get("pretokenizers") or [spec]) if spec else []
    if any(p.get("type") == "ByteLevel" and p.get("use_regex", True) for p in parts):
        return "gpt-2"
    return "default"


def export(hf_dir: str | Path, out: str | Path, dtype: str = "f16") -> Path:
    """Write ``hf_dir`` (a Llama checkpoint in safetensors) to ``out`` as GGUF; 2-D weights in ``dtype``."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    hf_dir, out = Path(hf_dir), Path(out)
    config = json.loads((hf_dir / "config.json").read_text())
    if config.get("model_type") not in SUPPORTED:
        raise ValueError(f"{hf_dir}: GGUF export supports {', '.join(SUPPORTED)}, not {config.get('model_type')!r}")
    weights: dict[str, np.ndarray] = {}
    for file in sorted(hf_dir.glob("*.safetensors")):
        weights.update(load_file(str(file)))
    n_layers, n_head = config["num_hidden_layers"], config["num_attention_heads"]
    n_kv = config.get("num_key_value_heads") or n_head
    head_dim = config.get("head_dim") or config["hidden_size"] // n_head
    rope = config.get("rope_parameters") or {}
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_layers)

    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(hf_dir.name)
    writer.add_context_length(config.get("max_position_embeddings", 2048))
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(rope.get("rope_theta", config.get("rope_theta", 10000.0))))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
    _tokenizer_fields(writer, hf_dir, config)
    ready: dict[str, np.ndarray] = {}  # already under their GGUF names
    if config["model_type"] == "mixtral":
        writer.add_expert_count(config["num_local_experts"])
        writer.add_expert_used_count(config["num_experts_per_tok"])
        ready = _stack_experts(weights, n_layers, config["num_local_experts"])

    if config.get("tie_word_embeddings") and "lm_head.weight" not in weights:
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
    for hf_name, array in [*weights.items(), *ready.items()]:
        name = hf_name if hf_name in ready else names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ValueError(f"{hf_dir}: no GGUF name for tensor {hf_name}")
        array = array.astype(np.float32)
        if hf_name.endswith("q_proj.weight"):
            array = _permute(array, n_head)
        elif hf_name.endswith("k_proj.weight"):
            array = _permute(array, n_kv)
        if dtype == "f16" and array.ndim >= 2:
            array = array.astype(np.float16)
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


def _read_header(path: Path) -> tuple[dict, dict[str, int]]:
    """(scalar metadata, tensor type counts) from a GGUF header, skipping arrays such as the vocabulary.

    A plain header walk: gguf-py's reader decodes every vocabulary entry, ~18 s for Gemma's 262k.
    """
    import mmap
    import struct

    import gguf

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
        pos = 24

        def string(at: int) -> tuple[str, int]:
            (length,) = struct.unpack_from("<Q", data, at)
            return data[at + 8 : at + 8 + length].decode("utf-8", "replace"), at + 8 + length

        def skip(kind: int, at: int) -> int:
            if kind == _STRING:
                return at + 8 + struct.unpack_from("<Q", data, at)[0]
            if kind == _ARRAY:
                inner, count = struct.unpack_from("<IQ", data, at)
                at += 12
                if inner in _SCALAR_BYTES:
                    return at + count * _SCALAR_BYTES[inner]
                for _ in range(count):
                    at = skip(inner, at)
                return at
            return at + _SCALAR_BYTES[kind]

        metadata: dict = {}
        formats = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
        for _ in range(n_kv):
            key, pos = string(pos)
            (kind,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if kind in formats:
                metadata[key] = struct.unpack_from(formats[kind], data, pos)[0]
            elif kind == _STRING:
                metadata[key] = string(pos)[0]
            pos = skip(kind, pos)
        counts: dict[str, int] = {}
        for _ in range(n_tensors):
            _, pos = string(pos)
            (n_dims,) = struct.unpack_from("<I", data, pos)
            pos += 4 + 8 * n_dims
            (kind,) = struct.unpack_from("<I", data, pos)
            pos += 12  # type, offset
            name = gguf.GGMLQuantizationType(kind).name
            counts[name] = counts.get(name, 0) + 1
    return metadata, counts


def tensor_types(path: str | Path) -> dict[str, int]:
    """How many tensors of each ggml type the GGUF holds (e.g. {"Q4_K": 27, "F32": 109})."""
    return dict(read_header(path)[1])


def file_type(path: str | Path) -> str:
    """The GGUF's declared file type (e.g. MOSTLY_Q4_K_M), or the dominant tensor type."""
    import gguf

    metadata, counts = read_header(path)
    value = metadata.get("general.file_type")
    if value is None:
        return max(counts, key=counts.get)
    try:
        return gguf.LlamaFileType(value).name
    except ValueError:
        return f"file_type {value}"


def precision(path: str | Path) -> str:
    """The GGUF's precision word for point ids and the report (``MOSTLY_Q4_K_M`` -> ``q4_k_m``)."""
    from harness.records.precision import from_gguf_file_type

    return from_gguf_file_type(file_type(path))


def is_full_precision(path: str | Path) -> bool:
    """True when every tensor is F32, F16 or BF16 (a source llama.cpp's quantizer can start from)."""
    return set(tensor_types(path)) <= {"F32", "F16", "BF16"}


read_header = per_file(_read_header)  # describe() asks once per point; the header walk takes ~0.7 s
