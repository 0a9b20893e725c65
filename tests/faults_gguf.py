"""Converter-class faults written into a GGUF: the artefact holds other weights than the checkpoint.

Each patch rewrites bytes of the file in place (the size never changes), as a converter bug would leave
them: the device path and the same-weights twin then run the same wrong weights and agree, so only the
dequantized check (``harness.correctness.dequantized``) can see them. ``adapter(patch)`` makes a
``llamacpp`` adapter whose quantized GGUF is a patched copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from harness.adapters.llamacpp import LlamaCppAdapter


def _tensors(path: Path):
    import gguf

    reader = gguf.GGUFReader(str(path), "r+")  # tensor data are writable views into the file
    return {t.name: t for t in reader.tensors}, reader


def swap_rows(path: Path, name: str = "blk.0.attn_q.weight", rows: tuple[int, int] = (1, 6)) -> None:
    """Two rows of one attention weight exchanged (a wrong index in a converter's row loop)."""
    tensors, reader = _tensors(path)
    data = tensors[name].data
    a, b = rows
    data[[a, b]] = data[[b, a]]
    reader.data.flush()


def patch_scale(path: Path, name: str = "blk.0.attn_v.weight", row: int = 2, factor: float = 8.0) -> None:
    """One block's scale multiplied (Q4_0, Q4_1 and Q8_0 blocks start with their f16 scale ``d``)."""
    tensors, reader = _tensors(path)
    data = tensors[name].data  # uint8 [rows, bytes per row]
    scale = data[row, :2].view(np.float16)
    scale[0] = np.float16(float(scale[0]) * factor)
    reader.data.flush()


def wrong_layer(path: Path, name: str = "blk.0.attn_v.weight", source: str = "blk.1.attn_v.weight") -> None:
    """A tensor written from another layer (an off-by-one layer index in the converter)."""
    tensors, reader = _tensors(path)
    tensors[name].data[...] = tensors[source].data
    reader.data.flush()


def small_scale(path: Path) -> None:
    """One block's scale off by half in a late feed-forward row: the output barely moves (against HF it
    is within the quantization cost), the weights are plainly not the checkpoint's."""
    patch_scale(path, "blk.1.ffn_down.weight", row=5, factor=1.5)


PATCHES = {"swap-rows": swap_rows, "patched-scale": patch_scale, "wrong-layer": wrong_layer, "small-scale": small_scale}


def scale_layer(path: Path, name: str = "blk.1.attn_v.weight", factor: float = 1.1) -> None:
    """Every block scale of one tensor multiplied by ``factor`` (a converter that rescales one layer's
    weights, or writes its scales from a slightly wrong absmax): within the format's rounding noise by size,
    but every error leans with its weight."""
    import gguf

    tensors, reader = _tensors(path)
    block, size = gguf.GGML_QUANT_SIZES[tensors[name].tensor_type]
    data = tensors[name].data  # uint8 [rows, bytes per row]: blocks of ``size`` bytes, each starting with its f16 d
    blocks = data.reshape(data.shape[0], -1, size)
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16)
    blocks[..., :2] = (scales.astype(np.float32) * factor).astype(np.float16).view(np.uint8)
    reader.data.flush()


# Systematic shifts the size test cannot see (its ratio stays under its line): the bias test's faults.
SUBTLE = {
    "layer-scale-1.05": lambda path: scale_layer(path, factor=1.05),
    "layer-scale-1.2": lambda path: scale_layer(path, factor=1.2),
}


def adapter(label: str) -> type[LlamaCppAdapter]:
    """A ``llamacpp`` adapter named ``llamacpp-<label>`` that runs a copy of its quantized GGUF with
    ``PATCHES[label]`` (or ``SUBTLE[label]``) written into it."""
    patch = {**PATCHES, **SUBTLE}[label]

    def _quantized(self, source, quantization, threads, cache):
        clean = LlamaCppAdapter._quantized(self, source, quantization, threads, cache)
        out = Path(cache) / "llamacpp-faults" / f"{clean.parent.name}-{label}" / "model.gguf"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(clean, out)
        patch(out)
        return out

    return type(
        f"Faulty{label.title().replace('-', '')}",
        (LlamaCppAdapter,),
        {"name": f"llamacpp-{label}", "_quantized": _quantized},
    )


def scale_tensor(path: Path, name: str = "blk.0.attn_v.weight", factor: float = 8.0) -> None:
    """One full-precision tensor multiplied (a converter that applies a scale twice, or to the wrong tensor)."""
    tensors, reader = _tensors(path)
    data = tensors[name].data  # F16 or F32 values, a writable view into the file
    data[...] = data * np.asarray(factor, dtype=data.dtype)
    reader.data.flush()


def converted_adapter(patch=scale_tensor) -> type[LlamaCppAdapter]:
    """A ``llamacpp`` adapter named ``llamacpp-converter-fault`` that runs a copy of llama.cpp's converted GGUF
    with ``patch`` written into it (the checkpoint's own conversion is left clean in the cache)."""

    def _source_gguf(self, model, cache):
        clean = LlamaCppAdapter._source_gguf(self, model, cache)
        out = Path(cache) / "llamacpp-faults" / f"{clean.parent.name}-{patch.__name__}" / "model.gguf"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(clean, out)
        patch(out)
        return out

    return type(
        "ConverterFault", (LlamaCppAdapter,), {"name": "llamacpp-converter-fault", "_source_gguf": _source_gguf}
    )
