"""Converter-class faults written into a GGUF: the artefact holds other weights than the checkpoint.

Each patch rewrites bytes of the file in place (the size never changes), as a converter bug would leave
them: the device path and the same-weights twin then run the same wrong weights and agree, so only the
dequantized check (``harness.correctness.dequantized``) can see them. ``adapter(patch)`` makes a
``llamacpp`` adapter whose quantized GGUF is a patched copy. ``ONE_LAYER`` holds the systematic slips of one
tensor the bias test must see in every format (``LAYOUTS``: where each block keeps its scale, min and quants),
``given_adapter`` an adapter that runs the scenario's own GGUF with one written into it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

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


@dataclass(frozen=True)
class Layout:
    """Where one block of a GGUF format keeps its parts, in bytes (ggml-common.h's block structs)."""

    d: int  # the f16 (super-)block scale
    quants: tuple[int, int]  # the bytes holding each quant's low bit field (Q5's and Q6_K's high bits elsewhere)
    bits: int  # that field's width: 8 (Q8_0, signed), 4 or 2 per quant
    minimum: Optional[int] = None  # the f16 min (Q4_1, Q5_1: ``m``) or the K-quants' ``dmin``
    min_codes: Optional[str] = None  # how a K-quant packs its sub-blocks' 4- or 6-bit min codes


LAYOUTS = {
    "Q8_0": Layout(0, (2, 34), 8),
    "Q4_0": Layout(0, (2, 18), 4),
    "Q4_1": Layout(0, (4, 20), 4, minimum=2),
    "Q5_0": Layout(0, (6, 22), 4),
    "Q5_1": Layout(0, (8, 24), 4, minimum=2),
    "Q2_K": Layout(80, (16, 80), 2, minimum=82, min_codes="nibble"),
    "Q3_K": Layout(108, (32, 96), 2),
    "Q4_K": Layout(0, (16, 144), 4, minimum=2, min_codes="six-bit"),
    "Q5_K": Layout(0, (48, 176), 4, minimum=2, min_codes="six-bit"),
    "Q6_K": Layout(208, (0, 128), 4),
}


def _blocks(path: Path, name: str):
    """``name``'s blocks as a writable uint8 view [blocks, bytes], its layout and the reader to flush."""
    import gguf

    tensors, reader = _tensors(path)
    kind = tensors[name].tensor_type
    _, size = gguf.GGML_QUANT_SIZES[kind]
    return tensors[name].data.reshape(-1, size), LAYOUTS[kind.name], reader


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(blocks[:, at : at + 2]).view(np.float16)[:, 0].astype(np.float32)


def _set_f16(blocks: np.ndarray, at: int, values: np.ndarray) -> None:
    blocks[:, at : at + 2] = values.astype(np.float16)[:, None].view(np.uint8)


def scale_layer(path: Path, name: str = "blk.1.attn_v.weight", factor: float = 1.1) -> None:
    """Every block scale ``d`` of one tensor multiplied by ``factor`` (a converter that rescales one layer's
    weights, or writes its scales from a slightly wrong absmax): within the format's rounding noise by size,
    but every error leans with its weight."""
    blocks, layout, reader = _blocks(path, name)
    _set_f16(blocks, layout.d, _f16(blocks, layout.d) * factor)
    reader.data.flush()


def shift_quants(path: Path, name: str = "blk.1.attn_v.weight") -> None:
    """Every quant of one tensor one grid step up, where its low bit field does not carry (a converter that
    rounds with the wrong offset, or a symmetric format's implicit zero point off by one: Q8_0, Q4_0's 8,
    Q6_K's 32): each weight shifted by its block's step, the same sign across a block."""
    blocks, layout, reader = _blocks(path, name)
    start, end = layout.quants
    if layout.bits == 8:
        quants = blocks[:, start:end].view(np.int8)
        quants[quants < 127] += 1
    else:
        packed = blocks[:, start:end]
        top = (1 << layout.bits) - 1
        for shift in range(0, 8, layout.bits):
            field = (packed >> shift) & top
            packed[field < top] += np.uint8(1 << shift)
    reader.data.flush()


def shift_min(path: Path, name: str = "blk.1.attn_v.weight") -> None:
    """One tensor's block minimums off by one step (a zero point off by one): Q4_1's and Q5_1's f16 min ``m``
    by one grid step ``d``; a K-quant's sub-block min codes by one (each sub-block's min ``dmin * m`` by
    ``dmin``), where the code does not carry."""
    blocks, layout, reader = _blocks(path, name)
    if layout.minimum is None:
        raise ValueError(f"{name}: a format without a block minimum (use shift_quants)")
    if layout.min_codes is None:  # Q4_1 / Q5_1: w = d * q + m
        _set_f16(blocks, layout.minimum, _f16(blocks, layout.minimum) + _f16(blocks, layout.d))
    elif layout.min_codes == "nibble":  # Q2_K: scales[16], each byte min << 4 | scale
        scales = blocks[:, :16]
        scales[(scales >> 4) < 15] += np.uint8(0x10)
    else:  # Q4_K / Q5_K: 12 bytes; mins 0-3 in bytes 4-7's low six bits, mins 4-7's low four in bytes 8-11's high nibble
        low, high = blocks[:, 8:12], blocks[:, 12:16]  # the scales' bytes 4-7 and 8-11 (they follow d and dmin)
        low[(low & 0x3F) < 0x3F] += np.uint8(1)
        high[(high >> 4) < 15] += np.uint8(0x10)
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


# One layer's systematic slips, for every GGUF format (``LAYOUTS``): ``ONE_LAYER[label](path, tensor)``.
ONE_LAYER = {
    "scales-x1.05": lambda path, name: scale_layer(path, name, 1.05),
    "scales-x1.2": lambda path, name: scale_layer(path, name, 1.2),
    "scales-x0.9": lambda path, name: scale_layer(path, name, 0.9),
    "quants+1": shift_quants,
    "min+1": shift_min,  # the formats with a block minimum: Q4_1, Q5_1, Q2_K, Q4_K, Q5_K
}


def given_adapter(label: str, tensor: str) -> type[LlamaCppAdapter]:
    """A ``llamacpp`` adapter named ``llamacpp-<label>`` that runs a copy of the GGUF the scenario gives the
    ``llamacpp`` adapter (``model.artefacts.llamacpp``) with ``ONE_LAYER[label]`` written into ``tensor``."""

    def _source_gguf(self, model, cache):
        from harness.io import file_sha256

        clean = model.given_for(LlamaCppAdapter.name).path
        out = Path(cache) / "llamacpp-faults" / f"given-{file_sha256(clean)[:16]}-{label}-{tensor}" / "model.gguf"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(clean, out)
        ONE_LAYER[label](out, tensor)
        return out

    return type(
        f"Given{label.title().replace('-', '').replace('+', 'Plus').replace('.', '')}",
        (LlamaCppAdapter,),
        {"name": f"llamacpp-{re.sub('[^a-z0-9-]', '', label.replace('+', 'plus'))}", "_source_gguf": _source_gguf},
    )
