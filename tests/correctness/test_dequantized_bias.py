"""The dequantized check's bias test (#39) on artefacts the harness builds from tiny-llama: every clean
format passes (llama.cpp Q8_0 / Q4_0 / Q4_1, NNCF int8 sym / asym, int4 sym / asym in groups of 32); one
layer's block scales x1.05 or x1.2 in a GGUF and one layer's int8 zero points off by one step in an IR
fail, though the size test reads them inside their format's rounding, through ``harness run`` and
``harness verify``. Faults: ``tests/faults_gguf.py`` (``scale_layer``), ``tests/faults_ov.py``
(``shift_zero_point``)."""

from __future__ import annotations

import re
import shutil
from importlib.util import find_spec

import pytest

from harness.adapters import registry
from harness.cli import main
from harness.correctness import dequantized
from harness.records.store import iter_records
from tests import faults_gguf
from tests.correctness.test_dequantized_check import gguf, read

needs_llama = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")
needs_openvino = pytest.mark.skipif(find_spec("openvino_genai") is None, reason="the openvino extra is not installed")

LAYER = "model.layers.1.self_attn.v_proj.weight"  # blk.1.attn_v, scale_layer's tensor


def assert_bias_fails(found, kinds: tuple[str, ...], where: str) -> None:
    """Failed by the bias test at least 3x past its line, naming the tensor and the kind."""
    bias = found.bias
    assert found.verdict == "fail" and bias.verdict == "fail" and bias.ratio >= 3, bias
    assert bias.kind in kinds and bias.worst.startswith(where), bias
    assert any(r.startswith(f"dequantized artefact (bias): {where}") for r in found.reasons), found.reasons


@needs_llama
@pytest.mark.parametrize(
    "quantization, factor, within_size",
    [
        ("int8_sym", 1.05, False),  # Q8_0's floor is small: the size test sees it too
        ("int8_sym", 1.2, False),
        ("int4_sym", 1.05, True),  # Q4_0: inside the size test's line, the fault
        ("int4_sym", 1.2, True),
        ("int4_asym", 1.1, True),
    ],
)
def test_a_layers_block_scales_off_fail_by_bias(tiny_llama, tmp_path, quantization, factor, within_size):
    clean = gguf(tiny_llama, quantization)
    found = dequantized.audit(*read(clean, tiny_llama.hf_dir))
    assert found.verdict == "pass" and found.bias.verdict == "pass" and found.bias.ratio < 1, found.bias
    patched = tmp_path / "model.gguf"
    shutil.copyfile(clean, patched)
    faults_gguf.scale_layer(patched, factor=factor)
    found = dequantized.audit(*read(patched, tiny_llama.hf_dir))
    assert (found.ratio < found.fail_factor) == within_size, found
    # Q4_1 (d * q + m): a scale off moves the block's mean too, so its lean may read as an offset
    assert_bias_fails(found, ("scale", "offset") if quantization == "int4_asym" else ("scale",), f"{LAYER} (every row")


def ir(tiny_llama, level, options):
    from harness.adapters.openvino import ir_export
    from harness.models.sources import cache_dir

    return ir_export.artefact(tiny_llama, level, options, cache_dir())


def audit_ir(tiny_llama, directory):
    from harness.adapters.openvino import weights

    xml = directory / "openvino_model.xml"
    return dequantized.audit_artefact(tiny_llama.hf_dir, lambda names, config: weights.read(xml, names, config))


@needs_openvino
@pytest.mark.parametrize(
    "level, options",
    [
        ("int8_sym", {}),
        ("int8_asym", {}),
        ("int4_sym", {"group_size": 32, "ratio": 1.0}),
        ("int4_asym", {"group_size": 32, "ratio": 1.0}),
    ],
)
def test_clean_nncf_levels_have_no_bias(tiny_llama, level, options):
    found = audit_ir(tiny_llama, ir(tiny_llama, level, options))
    assert found.verdict == "pass" and found.bias.verdict == "pass" and found.bias.ratio < 1, found.bias


@needs_openvino
def test_an_int8_asym_layers_zero_points_off_by_one_fail_by_bias(tiny_llama, tmp_path):
    from tests.faults_ov import shift_zero_point

    patched = tmp_path / "ir"
    shutil.copytree(ir(tiny_llama, "int8_asym", {}), patched)
    shift_zero_point(patched)
    found = audit_ir(tiny_llama, patched)
    assert found.ratio < found.fail_factor, found  # by size: 4.99x against the 5x line (the 4.76x)
    assert_bias_fails(found, ("offset",), "model.layers.1.mlp.down_proj.weight (every row, u8 asym)")
    assert found.bias.effect < -3, found.bias  # zp + 1: every weight one step (3.46 noise units) down


SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 6, prompts: 1}
sweep:
  adapter: [ADAPTERS]
  device: [DEVICE]
  quantization: [QUANT]
"""


@needs_llama
def test_harness_run_and_verify_fail_a_layers_scale_by_bias(write_scenario, tmp_path, capsys):
    faulty = [faults_gguf.adapter(label) for label in sorted(faults_gguf.SUBTLE)]
    text = SCENARIO.replace("ADAPTERS", ", ".join(["llamacpp", *(c.name for c in faulty)])).replace("DEVICE", "cpu")
    path = write_scenario(text.replace("QUANT", "int8_sym, int4_sym"))
    results = ["--results", str(tmp_path / "results"), "--isolation", "none"]
    for cls in faulty:
        registry.register_adapter(cls)
    try:
        assert main(["run", str(path), *results]) == 1
        capsys.readouterr()
        code = main(["verify", str(path), *results, "-k", "layer-scale"])  # the stored audits reused
        out = capsys.readouterr().out
    finally:
        for cls in faulty:
            registry.unregister_adapter(cls.name)
    records = {
        (r.point["adapter"], r.point["quantization"]): r.correctness for _, r in iter_records(tmp_path / "results")
    }
    assert len(records) == 6
    for (adapter, quantization), gate in records.items():
        audit = gate.same_weights.dequantized
        if adapter == "llamacpp":  # clean Q8_0 and Q4_0: no lean
            assert audit.verdict == "pass" and audit.bias.verdict == "pass", (quantization, audit.bias)
            continue
        assert gate.verdict == "fail", (adapter, quantization, gate.reasons)
        assert audit.bias.verdict == "fail" and audit.bias.ratio >= 3 and audit.bias.kind == "scale", audit.bias
        assert any(reason.startswith(f"dequantized artefact (bias): {LAYER}") for reason in gate.reasons)
    assert code == 1, out
    for label in faults_gguf.SUBTLE:
        for quant in ("int8_sym", "int4_sym"):
            assert re.search(
                rf"^FAIL   scenario::llamacpp-{label}-cpu-{quant}: .*dequantized artefact fail \([\d.]+x\), "
                r"bias fail \(scale \d+\.\dx line\)",
                out,
                re.M,
            ), out


@needs_openvino
def test_harness_run_fails_an_int8_asym_zero_point_off_by_one(write_scenario, tmp_path):
    from tests.faults_ov import ShiftedZeroPoint, run_with_fault

    text = SCENARIO.replace("ADAPTERS", "openvino, openvino-shiftedzeropoint").replace("DEVICE", "CPU")
    code, records = run_with_fault(ShiftedZeroPoint, write_scenario(text.replace("QUANT", "int8_asym")), tmp_path)
    assert code == 1
    clean, broken = records["openvino"].same_weights.dequantized, records["openvino-shiftedzeropoint"]
    assert clean.verdict == "pass" and clean.bias.verdict == "pass", clean.bias
    audit = broken.same_weights.dequantized
    assert broken.verdict == "fail" and audit.ratio < audit.fail_factor, audit
    assert audit.bias.verdict == "fail" and audit.bias.kind == "offset" and audit.bias.ratio >= 3, audit.bias
    assert audit.bias.worst.startswith("model.layers.1.mlp.down_proj.weight"), audit.bias
    assert any(reason.startswith("dequantized artefact (bias): model.layers.1.mlp") for reason in broken.reasons)


@needs_llama
def test_the_default_models_k_quant_gguf_reads_back_without_bias(cache_dir, reference_dir):
    """K-quants (Q4_K and Q6_K sub-blocks) on Gemma 3 270M's own Q4_K_M GGUF, whose checkpoint is converted
    from it: the two differ by bf16 rounding alone, which the storage-noise floor keeps from reading as a lean.
    Taken as a run takes it (``dequantized.check`` on the llama.cpp point's twin, stored in the session's
    reference store), so the README command's llama.cpp point reads this audit instead of computing it again."""
    from contextlib import nullcontext

    from harness.adapters.llamacpp import twin
    from harness.models import sources
    from harness.scenario.schema import ModelSpec

    gemma = sources.resolve(ModelSpec(source="gemma3-270m"), cache_dir)
    found = dequantized.check(reference_dir, gemma, twin.twin(gemma.gguf_path, 64, None, nullcontext))
    assert {"Q4_K", "Q6_K"} <= set(found.floors), found.floors
    assert found.verdict == "pass" and found.bias.verdict == "pass" and found.bias.ratio < 1, found.bias
