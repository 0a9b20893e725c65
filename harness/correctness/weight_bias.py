"""The bias half of the dequantized check: a systematic shift in an artefact's weights, whatever its size.

The size test (``harness.correctness.dequantized``) judges each row's error against its format's median
row error, so a converter slip smaller than rounding noise passes it: a zero point off by one step, a
layer's scales 5 to 20 % off. Rounding noise has no sign (each weight goes to its nearest grid point);
those slips do. So the error ``e = dequantized - hf`` is tested for a sign, in every quantization block
(the elements one scale or zero point covers: 32 for Q8_0 / Q4_0 / Q4_1, a K-quant's 16- or 32-element
sub-block, an OpenVINO group, or the whole row where the scale is per channel), and pooled per row and
per tensor, for two kinds of shift:

- ``offset``: the mean error over its standard error (a block's one-sample t; a zero point or a K-quant
  min off);
- ``scale``: the error's gain on the weight, ``slope = sum(e * w) / sum(w^2)``, over its standard error
  (the noise left once the slope is removed): a scale off by a factor makes an error proportional to the
  weight.

A row or a tensor pools its blocks' statistics (Stouffer: their sum over the square root of their count,
each block standardized by its own noise). A unit fails on two lines at once: its statistic past
``t_line`` (the level a clean artefact's largest statistic reaches by chance once in ``1 / ALPHA``
artefacts, Bonferroni over every test the artefact gets) and its effect, the shift in units of the
block's own rounding noise (statistic over the square root of the elements), past ``EFFECT_LINE``: a
huge tensor makes a tiny, harmless lean significant, never large. ``ratio`` is the smaller of the two
margins, so a unit fails when its ratio is above 1.

A tensor's gain is also set beside its format's lean, in its own unit (``GAIN_LINE``): llama.cpp's
quantizer (whose K-quants fit their scales by least squares) leaves every tensor of a format with the
same small negative gain (-1.7 % on Q2_K, -0.5 % on Q3_K, -0.25 % on Q4_K), and one layer whose scales
are a few per cent off stands out from the others by that much, however coarse the format's rounding (in
noise units a 2- or 3-bit format hides a 5 % scale: 0.27 against the 0.15 line).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

import numpy as np

if TYPE_CHECKING:
    from harness.models.stored_weights import Tensor
    from harness.records.weight_bias import WeightBias

ALPHA = 1e-3  # family-wise: the chance that a clean artefact's largest statistic crosses t_line
# The shift in units of the blocks' own rounding noise: a one-step offset is 3.46, a Q4_0 scale x1.05 about
# 0.5. Clean artefacts stay under the t line (ratio 0.66-0.73 on tiny-llama, every format); this line keeps
# a huge tensor's harmless lean (clamping at a grid's end, f16 scales) from failing on significance alone.
EFFECT_LINE = 0.15
# The least noise a block is credited with, relative to its weights' root mean square: a bf16 ulp. A
# checkpoint converted from the artefact itself (the default Gemma 3 270M from its Q4_K_M GGUF) differs
# from it by bf16 rounding alone, which on a few grid values is as coherent as a lean but no converter's.
STORAGE_NOISE = 2.0**-8
# A tensor's gain against its format's lean (the median gain of the format's tensors, 0 below LEAN_TENSORS of
# them): clean tensors differ from their format's lean by 0.2 % at most (Q2_K, the coarsest); 5 % is one layer's
# scales off.
GAIN_LINE = 0.01
LEAN_TENSORS = 3
NOISE_UNITS = "rounding-noise units"
GAIN_UNITS = "relative gain against the format's lean"
KINDS = ("offset", "scale")
METHOD = (
    "sign of the error per quantization block, pooled per row and tensor: mean error (offset) and error along "
    f"the weight (scale) over their noise; fails past a Bonferroni t line (alpha {ALPHA:g}) and an effect of "
    f"{EFFECT_LINE:g} rounding-noise units (at least {STORAGE_NOISE:g} of the block's rms); a tensor's gain "
    f"against its format's median gain past {GAIN_LINE:g}"
)


@dataclass
class BiasFinding:
    """The unit (block, row or tensor) whose bias is furthest past its lines."""

    ratio: float  # min(|statistic| / t_line, |effect| / EFFECT_LINE): above 1 fails
    where: str  # "<hf name> row <r> block <b> (columns c0-c1, <format>)", "<hf name> row <r>", "<hf name> (every row)"
    kind: str  # offset | scale
    statistic: float
    effect: float  # the shift in units of rounding noise
    t_line: float
    effect_line: float = EFFECT_LINE
    effect_unit: str = NOISE_UNITS


@dataclass
class _Blocks:
    """One tensor's per-block statistics, shape [rows, blocks] per kind."""

    t: dict[str, np.ndarray]
    size: int  # elements per block
    width: int
    gain: float  # the tensor's error along its weights, sum(e * w) / sum(w^2)
    gain_error: float  # its standard error, from each block's noise left once its own slope is removed


def block_size(tensor: Tensor, width: int) -> int:
    """The elements one scale covers along a row: the format's block where it divides the row, else the row."""
    block = tensor.block
    return block if block and block < width and width % block == 0 else width


def _stats(e: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Per block (the last axis) of errors ``e`` on weights ``w``: the offset and scale statistics."""
    size = e.shape[-1]
    floor = STORAGE_NOISE * np.sqrt((w * w).mean(axis=-1))
    mean = e.mean(axis=-1)
    sd = np.maximum(e.std(axis=-1, ddof=1) if size > 1 else 0.0, floor)
    power = (w * w).sum(axis=-1)
    along = (e * w).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(power > 0, along / power, 0.0)  # the error's gain on the weight: a scale off by 1 + slope
        rest = (e - slope[..., None] * w).std(axis=-1, ddof=1) if size > 1 else np.zeros_like(mean)
        rest = np.maximum(rest, floor)
        # an all-zero block (no floor): no error is no statistic, an error there is a shift from nothing
        offset = np.where(sd > 0, mean * np.sqrt(size) / sd, np.where(mean == 0, 0.0, np.copysign(np.inf, mean)))
        scale = np.where(rest > 0, slope * np.sqrt(power) / rest, 0.0)
    return {"offset": offset, "scale": scale, "along": along, "power": power, "noise": rest * rest * power}


def _blocks(values: np.ndarray, reference: np.ndarray, size: int) -> _Blocks:
    width = reference.shape[-1] if reference.ndim else 1
    w_all, v_all = reference.reshape(-1, width), values.reshape(-1, width)
    chunk = max(1, (1 << 22) // width)  # rows at a time: a 262k-row embedding in bounded memory
    parts = []
    for start in range(0, w_all.shape[0], chunk):
        w = w_all[start : start + chunk].reshape(-1, width // size, size).astype(np.float64)
        parts.append(_stats(v_all[start : start + chunk].reshape(w.shape).astype(np.float64) - w, w))
    power = sum(float(p["power"].sum()) for p in parts)
    along = sum(float(p["along"].sum()) for p in parts)
    noise = sum(float(p["noise"].sum()) for p in parts)
    gain, error = (along / power, np.sqrt(noise) / power) if power > 0 else (0.0, 0.0)
    return _Blocks({kind: np.concatenate([p[kind] for p in parts]) for kind in KINDS}, size, width, gain, error)


@lru_cache(maxsize=64)
def t_line(df: Optional[int], tests: int) -> float:
    """Two-sided Bonferroni line for ``tests`` tests: Student's t with ``df`` degrees of freedom (a single
    block), the normal where ``df`` is None (a pooled row or tensor)."""
    from scipy import stats

    p = ALPHA / (2 * max(tests, 1))
    return float(stats.norm.isf(p) if df is None else stats.t.isf(p, df))


def _variance(size: int) -> float:
    """Student's t variance with ``size - 1`` degrees of freedom: a pooled sum is divided by its root."""
    df = size - 1
    return df / (df - 2) if df > 2 else 3.0


def _worst(name: str, kind_name: str, blocks: _Blocks, tests: int, lean: float) -> BiasFinding:
    """The unit of one tensor furthest past its lines, over blocks, rows and the tensor (``lean``: the
    format's median gain)."""
    size, n_blocks = blocks.size, blocks.width // blocks.size
    root, spread = np.sqrt(size), np.sqrt(_variance(size))
    found: list[BiasFinding] = []

    def consider(statistic: float, effect: float, line: float, where: str, kind: str) -> None:
        found.append(
            BiasFinding(min(abs(statistic) / line, abs(effect) / EFFECT_LINE), where, kind, statistic, effect, line)
        )

    for kind in KINDS:
        t = blocks.t[kind]
        finite = np.where(np.isfinite(t), t, np.sign(t) * 1e12)  # an exact shift: as far as a float goes
        block_line = t_line(size - 1, tests)
        r, b = map(int, np.unravel_index(int(np.argmax(np.abs(finite))), t.shape))
        where = f"{name} row {r} block {b} (columns {b * size}-{(b + 1) * size - 1}, {kind_name})"
        consider(float(finite[r, b]), float(finite[r, b]) / root, block_line, where, kind)
        pooled_line = t_line(None, tests)
        if n_blocks > 1:  # a row of several blocks: pooled (a per-channel row is its own block)
            rows = finite.sum(axis=1) / np.sqrt(n_blocks) / spread
            effects = finite.mean(axis=1) / root
            r = int(np.argmax(np.minimum(np.abs(rows) / pooled_line, np.abs(effects) / EFFECT_LINE)))
            consider(float(rows[r]), float(effects[r]), pooled_line, f"{name} row {r} ({kind_name})", kind)
        if finite.shape[0] > 1:
            whole = float(finite.sum() / np.sqrt(finite.size) / spread)
            consider(whole, float(finite.mean() / root), pooled_line, f"{name} (every row, {kind_name})", kind)
    if blocks.gain_error > 0:  # the tensor's gain beside its format's
        shift = blocks.gain - lean
        statistic, line = shift / blocks.gain_error, t_line(None, tests)
        found.append(
            BiasFinding(
                min(abs(statistic) / line, abs(shift) / GAIN_LINE),
                f"{name} (every row, {kind_name}; gain {blocks.gain:+.2%} against the format's {lean:+.2%})",
                "scale",
                statistic,
                shift,
                line,
                GAIN_LINE,
                GAIN_UNITS,
            )
        )
    return max(found, key=lambda f: f.ratio)


def worst(reference: dict[str, np.ndarray], stored: dict[str, Tensor]) -> Optional[BiasFinding]:
    """The unit of ``stored`` (an artefact read back) whose error leans furthest past the bias lines;
    None where no tensor carries rounding noise (every tensor an exact copy)."""
    tensors = {  # an exact copy has no error to lean
        name: t
        for name, t in stored.items()
        if t.values.size > 1 and reference[name].ndim >= 1 and np.any(t.values != reference[name])
    }
    sizes = {name: block_size(tensor, reference[name].shape[-1]) for name, tensor in tensors.items()}
    tests = 0  # two kinds per block, per row and per tensor, and each tensor's gain
    for name, size in sizes.items():
        rows = reference[name].size // reference[name].shape[-1]
        tests += 2 * (rows * reference[name].shape[-1] // size + rows + 1) + 1
    blocks = {name: _blocks(tensor.values, reference[name], sizes[name]) for name, tensor in tensors.items()}
    gains: dict[str, list[float]] = {}
    for name, tensor in tensors.items():
        gains.setdefault(tensor.stored_type, []).append(blocks[name].gain)
    leans = {kind: float(np.median(g)) if len(g) >= LEAN_TENSORS else 0.0 for kind, g in gains.items()}
    found: Optional[BiasFinding] = None  # None: every tensor an exact copy
    for name, tensor in tensors.items():
        candidate = _worst(name, tensor.stored_type, blocks[name], tests, leans[tensor.stored_type])
        if found is None or candidate.ratio > found.ratio:
            found = candidate
    return found


def judge(reference: dict[str, np.ndarray], stored: dict[str, Tensor]) -> Optional[WeightBias]:
    """The record's ``WeightBias`` for an artefact read back (``stored``) against the checkpoint."""
    from harness.records.weight_bias import WeightBias

    found = worst(reference, stored)
    if found is None:
        return None
    return WeightBias(
        verdict="fail" if found.ratio > 1 else "pass",
        ratio=found.ratio,
        worst=found.where,
        kind=found.kind,
        statistic=found.statistic,
        t_line=found.t_line,
        effect=found.effect,
        effect_line=found.effect_line,
        effect_unit=found.effect_unit,
        method=METHOD,
    )


def reason(found: WeightBias) -> str:
    """The failure's message: tensor, block and the kind of error."""
    what = {
        "offset": "the same sign across it (a zero point or offset off)",
        "scale": "proportional to the weights (a scale off)",
    }[found.kind]
    return (
        f"dequantized artefact (bias): {found.worst} has {'an' if found.kind == 'offset' else 'a'} {found.kind} "
        f"bias, its error {what}: "
        f"{found.effect:+.3g} {found.effect_unit or NOISE_UNITS} (line {found.effect_line:g}), "
        f"statistic {found.statistic:+.1f} "
        f"(line {found.t_line:.1f}), {found.ratio:.1f}x past both: a converter bug however small next to rounding"
    )
