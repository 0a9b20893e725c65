from __future__ import annotations

import dataclasses

import pytest

from harness.run import planning
from harness.scenario.schema import AXES, Sweep
from harness.scenario.sweep import Point, expand


def load(text: str):
    return planning.loads(text, "s.yaml", "s")


def test_product_of_axes_with_readable_ids():
    points = expand(
        load("""
model: tiny-llama
sweep:
  adapter: [hf]
  max_seq_len: [128, 256]
  prompt_len: [32, 64]
""")
    )
    assert [p.id for p in points] == [
        "hf-cpu-bf16-seq128-prompt32",
        "hf-cpu-bf16-seq128-prompt64",
        "hf-cpu-bf16-seq256-prompt32",
        "hf-cpu-bf16-seq256-prompt64",
    ]
    assert points[0].axes() == {
        "adapter": "hf",
        "device": "cpu",
        "max_seq_len": 128,
        "quantization": "none",
        "prompt_len": 32,
        "beam_width": 1,
        "batch_size": 1,
        "moe_chunk_size": None,
        "moe_capacity": None,
        "speculative": "none",
    }


def test_quantization_replaces_the_dtype_in_ids():
    points = expand(
        load("""
model: {source: tiny-llama, dtype: fp32}
sweep: {adapter: [hf, openvino], device: [cpu, CPU], quantization: [none, int4_sym]}
""")
    )
    assert "hf-cpu-fp32" in [p.id for p in points] and "openvino-CPU-int4_sym" in [p.id for p in points]


def test_exclude_removes_and_include_adds_with_first_values_as_defaults():
    points = expand(
        load("""
model: tiny-llama
sweep:
  adapter: [hf]
  beam_width: [1, 4]
  batch_size: [1, 8]
exclude:
  - {beam_width: 4, batch_size: 8}
include:
  - {beam_width: 2}
  - {beam_width: 1, batch_size: 1}
""")
    )
    ids = [p.id for p in points]
    assert ids == ["hf-cpu-bf16-beam1-bs1", "hf-cpu-bf16-beam1-bs8", "hf-cpu-bf16-beam4-bs1", "hf-cpu-bf16-beam2-bs1"]
    assert points[-1].batch_size == 1  # filled from the axis's first value


def test_point_has_one_field_per_axis_and_takes_keywords_only():
    assert [f.name for f in dataclasses.fields(Point)] == [*AXES, "id"]
    assert AXES == tuple(Sweep.model_fields)
    with pytest.raises(TypeError):
        Point("hf", "cpu")  # positional axes were easy to misorder
    assert Point(adapter="hf", device="cpu").axes() == {axis: getattr(Sweep(adapter=["hf"]), axis)[0] for axis in AXES}
