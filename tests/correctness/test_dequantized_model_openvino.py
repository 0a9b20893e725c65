"""The dequantized-model comparison (#29) on OpenVINO: a weight-compressed IR's CPU point against HF
transformers (fp32) running the IR's own weights, dequantized, through ``harness run``.

The floor imitates the CPU plugin's rounding as the compiled model reports it
(``harness.adapters.openvino.rounding``): at f32 inference precision, with every FullyConnected on an f32
kernel (no dynamic quantization ran, though the property asks for groups of 32), the only rounding is
the f16 KV cache. A clean point sits under that floor, and drift fails the point; a setting the model does
not cover (bf16 precision, a quantizing kernel, a u8 cache) keeps the comparison report-only.
"""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from harness.adapters.openvino import rounding

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 16, prompts: 2}
quantization_options: {int4_group_size: 32}
sweep:
  adapter: [openvino, openvino-halvedhead]
  device: [CPU]
  quantization: [int8_sym]
"""


@pytest.mark.skipif(find_spec("openvino_genai") is None, reason="the openvino extra is not installed")
def test_a_clean_openvino_point_sits_at_the_plugins_rounding_and_drift_fails(write_scenario, tmp_path, capsys):
    from tests.faults_ov import HalvedHead, run_with_fault

    code, records = run_with_fault(HalvedHead, write_scenario(SCENARIO), tmp_path)
    assert code == 1
    clean = records["openvino"].same_weights.dequantized_model
    # the floor names the settings the point compiled and ran with, and models them: drift fails
    assert clean.fail_on_drift and "INFERENCE_PRECISION_HINT f32" in clean.floor_method, clean
    assert "DYNAMIC_QUANTIZATION_GROUP_SIZE" in clean.floor_method and "KV cache f16" in clean.floor_method
    assert clean.verdict == "pass" and clean.kl_ratio < 1, clean
    broken = records["openvino-halvedhead"].same_weights.dequantized_model
    assert broken.fail_on_drift and broken.verdict in ("drift", "fail") and broken.kl_ratio > 5, broken
    assert records["openvino-halvedhead"].verdict == "fail"


F32_RUN = rounding.Settings("f32", 32, frozenset({"brgemm_avx2_f32"}), frozenset({"f16"}))


@pytest.mark.parametrize(
    "device, settings, why",
    [
        ("GPU", F32_RUN, "device GPU"),
        ("CPU", rounding.Settings("bf16", 32, frozenset({"brgemm_avx512_amx_bf16"}), frozenset({"bf16"})), "bf16"),
        ("CPU", rounding.Settings("f32", 32, frozenset({"brgemm_avx512_amx_i8"}), frozenset({"f16"})), "amx_i8"),
        ("CPU", rounding.Settings("f32", 0, frozenset({"brgemm_avx2_f32"}), frozenset({"u8"})), "KV cache"),
        ("CPU", rounding.Settings("f32", None, frozenset({"brgemm_avx2_f32"}), frozenset({"f16"})), "does not report"),
    ],
)
def test_settings_the_model_does_not_cover_keep_the_comparison_report_only(device, settings, why):
    found = rounding.model_of(device, settings)
    assert isinstance(found, str) and why in found


def test_an_f32_run_rounds_the_kv_cache_only():
    found = rounding.model_of("CPU", F32_RUN)
    assert not isinstance(found, str) and found.inputs("i8") is None and found.attention is rounding.f16
