"""The gate's KL tiers by position bucket (harness.correctness.positions) and the same-weights combination
with the dequantized check, at their edges, through the gate's conclusion (``gate._conclude``, what
``gate.run`` returns) on hand-built per-position KLs. Each assertion is here because a mutant survived
without it (``python benchmarks/mutation.py correctness``, docs/benchmarks.md)."""

from __future__ import annotations

from harness.correctness import gate, positions
from harness.correctness import same_weights as sw
from harness.correctness.reference import PromptReference, Reference


def _long_reference(floor: dict, head: int = 16, tokens: int = 280) -> Reference:
    prompt = PromptReference("long", "text", list(range(head)), [0] * tokens, [[0]] * tokens, [[0.0]] * tokens)
    return Reference(model={}, settings={"top_m": 64, "eos_ids": []}, versions={}, noise_floor=floor, prompts=[prompt])


def test_bucket_edges_double_past_512():
    assert positions.bucket_of(1023) == (512, 1023) and positions.bucket_of(1024) == (1024, 2047)
    assert positions.bucket_of(2047) == (1024, 2047) and positions.bucket_of(2048) == (2048, 4095)


def test_the_dequantized_check_fails_a_point_its_twin_passes():
    assert sw.combine("pass", "pass", "fail") == (
        "fail",
        "the dequantized artefact differs from the HF checkpoint beyond its quantization: the weights were "
        "written wrong (a converter bug), which the same-weights twin shares",
    )
    assert sw.combine("drift", "pass", "pass") == ("drift", None)
    assert sw.combine("drift", None, None) == ("drift", None)
