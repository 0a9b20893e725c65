"""A GGUF's tensors back under the HF checkpoint's names, dequantized to fp32 with gguf-py.

The inverse of what writes a GGUF from an HF checkpoint (harness's exporter,
``harness.adapters.llamacpp.gguf_export``, and llama.cpp's ``convert_hf_to_gguf.py``): each HF tensor
name is mapped to its GGUF name with gguf-py's tensor-name table (the one both converters use), the
GGUF tensor is dequantized (``gguf.quants.dequantize``) and the converter's transforms are undone:

- llama-family attention: Q and K rows were permuted from HF's half-split RoPE layout to llama.cpp's
  interleaved pairs; the inverse permutation restores HF's rows (head counts from the HF config, not
  from the GGUF's metadata, which may itself be wrong);
- Gemma: RMSNorm weights were written as ``1 + w`` (llama.cpp's norm multiplies by the weight);
- routed experts (Mixtral) were stacked into one 3-D tensor per layer and projection;
- a tied output head (``lm_head`` = embeddings) may be absent, or present as a copy.

Only the names the HF checkpoint holds are read: the result is a state dict for that checkpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.models import gguf_header
from harness.models.stored_weights import Tensor, UnsupportedLayout

if TYPE_CHECKING:
    import gguf

# HF names -> GGUF names for Mixtral experts, stacked by the converters (expert index = first axis)
_EXPERT = re.compile(r"model\.layers\.(\d+)\.block_sparse_moe\.experts\.(\d+)\.(w[123])\.weight")
_EXPERT_KIND = {"w1": "FFN_GATE_EXP", "w3": "FFN_UP_EXP", "w2": "FFN_DOWN_EXP"}
_PERMUTED = {"llama", "mixtral"}  # archs whose converters permute Q/K rows for interleaved RoPE
# K-quants: a 256-element super-block whose sub-blocks carry their own scale (and min): the unit a shift covers
_SUB_BLOCK = {"Q2_K": 16, "Q3_K": 16, "Q4_K": 32, "Q5_K": 32, "Q6_K": 16}
_NORM_SHIFTED = {"gemma", "gemma2", "gemma3", "gemma3n"}  # archs written with RMSNorm weight + 1


def unpermute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of the converters' Q/K permutation (interleaved pairs back to HF's half-split halves)."""
    rows = weights.shape[0]
    return weights.reshape(n_head, rows // n_head // 2, 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


@dataclass(frozen=True)
class TensorInPlace:
    """One GGUF tensor's data in place (a view of the memory-mapped file), shaped as gguf-py's reader
    shapes it: numpy order, and a quantized type's rows as bytes."""

    name: str
    tensor_type: "gguf.GGMLQuantizationType"
    data: np.ndarray


# types gguf-py's reader gives as typed values; the others (quantized, BF16) as bytes per row
_ITEM = {
    "F16": np.float16,
    "F32": np.float32,
    "F64": np.float64,
    "I8": np.int8,
    "I16": np.int16,
    "I32": np.int32,
    "I64": np.int64,
}


def tensors_in_place(gguf_path: Path) -> tuple[str | None, dict[str, TensorInPlace]]:
    """The architecture and tensors of a GGUF, placed by the header walk that checked them against the file
    (``harness.models.gguf_header``). Not gguf-py's ``GGUFReader``: it parses every metadata value into numpy
    views, seconds for a 262k-entry vocabulary that no weight needs (``benchmarks/gguf_weights_read.py``)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quant_shape_to_byte_shape

    header = gguf_header.read(gguf_path)
    mapped = np.memmap(gguf_path, dtype=np.uint8, mode="r")
    tensors = {}
    for info in header.tensor_infos:
        kind = GGMLQuantizationType(info.kind)
        shape = tuple(reversed(info.dims))
        data = mapped[info.start : info.start + info.nbytes]
        item = _ITEM.get(kind.name)
        data = data.view(item).reshape(shape) if item else data.reshape(quant_shape_to_byte_shape(shape, kind))
        tensors[info.name] = TensorInPlace(info.name, kind, data)
    return header.architecture, tensors


def _dequantized(tensor: TensorInPlace) -> np.ndarray:
    from gguf.quants import dequantize

    return np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)


def read(gguf_path: str | Path, hf_names: dict[str, tuple[int, ...]], config: dict) -> dict[str, Tensor]:
    """The GGUF's tensors for the HF tensors ``hf_names`` (name -> shape), under those names.

    ``config`` is the HF checkpoint's config.json (head counts, tied embeddings). A name with no GGUF
    tensor raises ``KeyError``, except a tied ``lm_head.weight`` (transformers ties it to the embeddings).
    """
    import gguf

    arch, tensors = tensors_in_place(Path(gguf_path))
    if arch is None:
        raise UnsupportedLayout(f"{gguf_path}: no general.architecture in its metadata")
    n_layers = config["num_hidden_layers"]
    n_head = config["num_attention_heads"]
    n_kv = config.get("num_key_value_heads") or n_head
    if arch.upper() not in gguf.MODEL_ARCH.__members__:
        raise UnsupportedLayout(f"{gguf_path}: gguf-py knows no architecture {arch!r}")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch.upper()], n_layers)
    cache: dict[str, np.ndarray] = {}

    def values(name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = _dequantized(tensors[name])
        return cache[name]

    out: dict[str, Tensor] = {}
    for hf_name, shape in hf_names.items():
        expert = _EXPERT.fullmatch(hf_name)
        if expert:
            layer, index, kind = int(expert[1]), int(expert[2]), expert[3]
            name = gguf.TENSOR_NAMES[getattr(gguf.MODEL_TENSOR, _EXPERT_KIND[kind])].format(bid=layer) + ".weight"
            array = values(name)[index]
        else:
            name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            if name not in tensors:
                if hf_name == "lm_head.weight" and config.get("tie_word_embeddings", False):
                    continue
                raise KeyError(f"{gguf_path}: no tensor {name!r} for {hf_name}")
            array = values(name)
        array = array.reshape(shape)
        if arch in _PERMUTED and hf_name.endswith("q_proj.weight"):
            array = unpermute(array, n_head)
        elif arch in _PERMUTED and hf_name.endswith("k_proj.weight"):
            array = unpermute(array, n_kv)
        if arch in _NORM_SHIFTED and hf_name.endswith("norm.weight"):
            array = array - 1.0
        kind = tensors[name].tensor_type
        out[hf_name] = Tensor(name, kind.name, array, block=_SUB_BLOCK.get(kind.name, gguf.GGML_QUANT_SIZES[kind][0]))
    return out
