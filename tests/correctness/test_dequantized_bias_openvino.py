"""The dequantized check's bias test (#39) on every NNCF level the ``openvino`` adapter compresses to: int8
symmetric and asymmetric (per channel) and int4 symmetric and asymmetric in groups of 32 and of 128 (the
default), on a tiny llama with 256-wide rows (``tests/kquant_gguf.py``). Every clean IR passes; one layer's
scales off by 5 to 20 %, its zero points off by one step (asymmetric) or its quants one step up (symmetric:
the implicit zero point off by one) fail at least 3x past the bias line, naming the tensor and the kind,
through the audit and through ``harness run``. Faults: ``tests/faults_ov.py``."""

from __future__ import annotations

import shutil
from importlib.util import find_spec

import pytest

from harness.correctness import dequantized
from tests import faults_ov

pytestmark = pytest.mark.skipif(find_spec("openvino_genai") is None, reason="the openvino extra is not installed")

LAYER = "model.layers.1.mlp.down_proj.weight"
CONSTANT = f"self.{LAYER}"
LEVELS = {
    "int8_sym": ("int8_sym", {}),
    "int8_asym": ("int8_asym", {}),
    "int4_sym-g32": ("int4_sym", {"group_size": 32, "ratio": 1.0}),
    "int4_asym-g32": ("int4_asym", {"group_size": 32, "ratio": 1.0}),
    "int4_sym-g128": ("int4_sym", {"group_size": 128, "ratio": 1.0}),
    "int4_asym-g128": ("int4_asym", {"group_size": 128, "ratio": 1.0}),
}
FAULTS = {
    "scales-x1.05": lambda ir: faults_ov.scale_layer(ir, f"{CONSTANT}/scale", 1.05),
    "scales-x1.2": lambda ir: faults_ov.scale_layer(ir, f"{CONSTANT}/scale", 1.2),
    "scales-x0.9": lambda ir: faults_ov.scale_layer(ir, f"{CONSTANT}/scale", 0.9),
    "zero-point+1": lambda ir: faults_ov.shift_zero_point(ir, f"{CONSTANT}/zero_point", 1),
    "zero-point-1": lambda ir: faults_ov.shift_zero_point(ir, f"{CONSTANT}/zero_point", -1),
    "quants+1": lambda ir: faults_ov.shift_quants(ir, CONSTANT),
}
CASES = [
    (level, fault)
    for level in LEVELS
    for fault in FAULTS
    if not fault.startswith(("zero-point", "quants")) or fault.startswith("zero") == ("asym" in level)
]


def ir(wide, level):
    from harness.adapters.openvino import ir_export
    from harness.models import sources
    from harness.models.sources import cache_dir
    from harness.scenario.schema import ModelSpec

    model = sources.resolve(ModelSpec(source=str(wide)), cache_dir())
    return ir_export.artefact(model, *LEVELS[level], cache_dir())


def audit(wide, directory):
    from harness.adapters.openvino import weights

    xml = directory / "openvino_model.xml"
    return dequantized.audit_artefact(wide, lambda names, config: weights.read(xml, names, config))


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_every_clean_nncf_level_reads_back_without_bias(wide_llama, level):
    found = audit(wide_llama, ir(wide_llama, level))
    assert found.verdict == "pass" and found.bias.verdict == "pass" and found.bias.ratio < 1, found.bias


@pytest.mark.parametrize("level, fault", CASES)
def test_one_layers_slip_fails_by_bias_at_every_level(wide_llama, tmp_path, level, fault):
    patched = tmp_path / "ir"
    shutil.copytree(ir(wide_llama, level), patched)
    FAULTS[fault](patched)
    found = audit(wide_llama, patched)
    bias = found.bias
    assert found.verdict == "fail" and bias.verdict == "fail" and bias.ratio >= 3, (found.ratio, bias)
    assert bias.worst.startswith(LAYER), bias
    assert any(r.startswith(f"dequantized artefact (bias): {LAYER}") for r in found.reasons), found.reasons


SCENARIO = """
model: WIDE
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 6, prompts: 1}
sweep:
  adapter: [ADAPTERS]
  device: [CPU]
  quantization: [int4_asym]
"""


@pytest.mark.parametrize("fault", [faults_ov.ScaledLayer, faults_ov.ShiftedZeroPoint], ids=lambda c: c.label)
def test_harness_run_fails_an_int4_asym_layers_slip(wide_llama, write_scenario, tmp_path, fault):
    """int4 asymmetric in groups of 128 (the default): one layer's scales x1.05, or its zero points +1."""
    name = f"openvino-{fault.__name__.lower()}"
    text = SCENARIO.replace("WIDE", str(wide_llama)).replace("ADAPTERS", f"openvino, {name}")
    code, records = faults_ov.run_with_fault(fault, write_scenario(text), tmp_path)
    assert code == 1
    clean = records["openvino"].same_weights.dequantized
    assert clean.verdict == "pass" and clean.bias.verdict == "pass" and clean.bias.ratio < 1, clean.bias
    audit = records[name].same_weights.dequantized
    assert records[name].verdict == "fail" and audit.ratio < audit.fail_factor, audit  # inside 4-bit rounding
    assert audit.bias.verdict == "fail" and audit.bias.ratio >= 3 and audit.bias.worst.startswith(LAYER), audit.bias
    assert any(reason.startswith(f"dequantized artefact (bias): {LAYER}") for reason in records[name].reasons)
