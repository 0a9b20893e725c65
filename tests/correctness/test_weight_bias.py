"""The dequantized check's bias test (#39) on weights quantized here in numpy (Q4_0-like blocks of 32 and
per-channel int8 with zero points): rounding noise has no sign and passes; a shift of one quantization
step in one block, or a scale a few per cent off across a tensor, leans one way and fails, named by
tensor, block and kind, however small next to the rounding."""

from __future__ import annotations

import numpy as np
import pytest

from harness.correctness import dequantized, weight_bias
from harness.models.stored_weights import Tensor


def q4_blocks(weights: np.ndarray, scale: float = 1.0, shift_block=None, top: int = 7) -> np.ndarray:
    """Symmetric 4-bit blocks of 32 (one scale per block), dequantized; ``scale`` multiplies every block's
    scale, ``shift_block`` (row, block) moves that block's grid by one step; ``top`` 3 makes them 3-bit."""
    blocks = weights.reshape(weights.shape[0], -1, 32)
    d = np.abs(blocks).max(axis=-1, keepdims=True) / top
    q = np.clip(np.round(blocks / d), -top - 1, top)
    out = q * d * scale
    if shift_block is not None:
        out[shift_block] += d[shift_block]
    return out.reshape(weights.shape).astype(np.float32)


def u8_rows(weights: np.ndarray, zero_point_step: int = 0, row=None) -> np.ndarray:
    """Asymmetric 8-bit, one scale and zero point per row; ``row``'s zero point off by ``zero_point_step``."""
    low, high = weights.min(axis=1, keepdims=True), weights.max(axis=1, keepdims=True)
    s = (high - low) / 255
    zp = np.round(-low / s)
    q = np.clip(np.round(weights / s) + zp, 0, 255)
    zp_read = zp.copy()
    if row is not None:
        zp_read[row] += zero_point_step
    return ((q - zp_read) * s).astype(np.float32)


def model(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"layers.{i}.weight": rng.standard_normal((128, 256)).astype(np.float32) * 0.02 for i in range(4)}


def stored(reference, kind, values_of, block):
    return {name: Tensor(name, kind, values_of(name, w), block) for name, w in reference.items()}


def test_clean_rounding_has_no_sign():
    reference = model()
    for kind, values_of, block in (
        ("Q4_0", lambda n, w: q4_blocks(w), 32),
        ("u8 asym", lambda n, w: u8_rows(w), None),
    ):
        found = weight_bias.judge(reference, stored(reference, kind, values_of, block))
        assert found.verdict == "pass" and found.ratio < 1, found


def test_one_block_shifted_by_one_step_fails_naming_the_block():
    reference = model()
    values = {n: q4_blocks(w, shift_block=(5, 3) if n == "layers.2.weight" else None) for n, w in reference.items()}
    found = dequantized.audit(reference, stored(reference, "Q4_0", lambda n, w: values[n], 32))
    assert found.ratio < found.fail_factor, found  # the size test: inside 4-bit rounding
    bias = found.bias
    assert found.verdict == "fail" and bias.verdict == "fail" and bias.kind == "offset", bias
    assert bias.worst == "layers.2.weight row 5 block 3 (columns 96-127, Q4_0)", bias
    assert any(r.startswith("dequantized artefact (bias): layers.2.weight row 5 block 3") for r in found.reasons)


@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_a_layers_scale_a_few_percent_off_fails_naming_the_tensor(factor):
    reference = model()
    values = {n: q4_blocks(w, scale=factor if n == "layers.1.weight" else 1.0) for n, w in reference.items()}
    found = dequantized.audit(reference, stored(reference, "Q4_0", lambda n, w: values[n], 32))
    assert found.ratio < found.fail_factor and found.bias.verdict == "fail", found
    assert found.bias.kind == "scale" and found.bias.worst.startswith("layers.1.weight (every row, Q4_0"), found.bias
    assert found.bias.ratio > 3 and np.sign(found.bias.effect) == np.sign(factor - 1), found.bias


def test_a_layers_scale_off_in_a_3_bit_format_fails_against_the_formats_lean():
    """In 3 bits a 5 % scale is a fraction of the rounding noise, under the noise-unit line; against the gain the
    format's other tensors share (here all of them 1.5 % low, as a least-squares quantizer leaves them) it
    stands out by 5 %, 5x the gain line. The shared lean alone passes."""
    reference = model()
    lean = {n: q4_blocks(w, scale=0.985, top=3) for n, w in reference.items()}
    found = weight_bias.judge(reference, stored(reference, "Q3", lambda n, w: lean[n], 32))
    assert found.verdict == "pass", found
    values = {n: w * (1.05 if n == "layers.2.weight" else 1.0) for n, w in lean.items()}
    found = dequantized.audit(reference, stored(reference, "Q3", lambda n, w: values[n], 32))
    assert found.ratio < found.fail_factor and found.verdict == "fail", found
    bias = found.bias
    assert bias.kind == "scale" and bias.effect_unit == weight_bias.GAIN_UNITS and bias.ratio >= 3, bias
    assert bias.worst.startswith("layers.2.weight (every row, Q3; gain"), bias
    assert abs(bias.effect - 0.05) < 0.01, bias  # the scale's own error, against the format's lean


def test_a_per_channel_zero_point_off_by_one_fails_its_row():
    reference = model()
    values_of = lambda n, w: u8_rows(w, 1, row=7) if n == "layers.3.weight" else u8_rows(w)  # noqa: E731
    found = dequantized.audit(reference, stored(reference, "u8 asym", values_of, None))
    assert found.ratio < found.fail_factor and found.verdict == "fail", found
    assert found.bias.kind == "offset" and found.bias.effect < 0, found.bias  # zp + 1: one step down
    assert found.bias.worst == "layers.3.weight row 7 block 0 (columns 0-255, u8 asym)"
    assert found.bias.ratio > 3, found.bias


def test_exact_copies_have_nothing_to_judge():
    reference = model()
    assert weight_bias.judge(reference, stored(reference, "F32", lambda n, w: w.copy(), None)) is None
    shifted = stored(reference, "F32", lambda n, w: w + np.float32(0.01) * (n == "layers.0.weight"), None)
    assert weight_bias.judge(reference, shifted).verdict == "fail"  # a shift with no noise at all
