"""Record part of the dequantized check's bias test (``harness.correctness.weight_bias``): the block, row or
tensor of the artefact whose error leans furthest in one direction (an offset, or a scale), and how far past
its lines. ``ratio`` above 1 fails the dequantized check whatever the size test says."""

from __future__ import annotations

from typing import Literal, Optional

from harness.records.base import Part


class WeightBias(Part):
    verdict: Literal["pass", "fail"]
    ratio: float  # min(|statistic| / t_line, |effect| / effect_line): above 1 fails
    worst: (
        str  # "<hf name> row <r> block <b> (columns c0-c1, <format>)", "... row <r> (<format>)", "... (every row, ...)"
    )
    kind: Literal["offset", "scale"]  # the same sign across the unit, or an error proportional to the weights
    statistic: float  # a block's t, or a row's / tensor's pooled z
    t_line: float  # Bonferroni over every test of the artefact
    effect: float  # in ``effect_unit``: the shift in units of the blocks' own rounding noise, or a tensor's gain
    effect_line: float
    effect_unit: Optional[str] = None  # None (records before it): rounding-noise units
    method: Optional[str] = None
