"""The dequantized-model comparison (#29) on OpenVINO: a weight-compressed IR's CPU point against HF
transformers (fp32) running the IR's own weights, dequantized, through ``harness run``.

The floor imitates the CPU plugin's rounding as the compiled model reports it
(``harness.adapters.openvino.rounding``). At f32 inference precision, with every FullyConnected on an f32
kernel (no dynamic quantization ran, though the property asks for groups of 32), the only rounding is
the f16 KV cache; at bf16 (the plugin's default on a CPU with AVX512-bf16 or AMX) every weight and every
tensor between ops is bf16, and where the bf16 kernel quantizes its input (AVX512-bf16 without AMX) that input is
int8 groups of a bf16 tensor. Either way a clean point sits under that floor, and drift fails the point; a
setting the model does not cover (f16 precision, a quantizing kernel, a u8 cache) keeps the comparison
report-only.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.util import find_spec

import numpy as np
import pytest

from harness.adapters.openvino import rounding
from tests.machine import cpu_has_int8_dot_product, openvino_cpu_precision

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 16, prompts: 2}
quantization_options: {int4_group_size: 32}
sweep:
  adapter: [ADAPTERS]
  device: [CPU]
  quantization: [int8_sym]
"""


@pytest.mark.skipif(find_spec("openvino_genai") is None, reason="the openvino extra is not installed")
@pytest.mark.parametrize("pin", [None, "f32", "f32-nodq"], ids=["plugin-default", "f32-pinned", "f32-nodq-pinned"])
def test_a_clean_openvino_point_sits_at_the_plugins_rounding_and_drift_fails(write_scenario, tmp_path, capsys, pin):
    from tests.faults_ov import PINNED, HalvedHead, run_with_fault

    # The path the points run: the plugin's default on this CPU, derived from the machine (bf16 with
    # AVX512-bf16 or AMX, f32 without; dynamic quantization of the matmul inputs where the CPU has int8
    # dot products), or one pinned in the plugin properties to run another CPU's path on this one: f32
    # with dynamic quantization (an AVX512-VNNI CPU without bf16), f32 without (an AVX2-only CPU).
    default = openvino_cpu_precision()
    if pin and default == "f32" and not cpu_has_int8_dot_product():
        pytest.skip(f"this CPU's default path is f32 without dynamic quantization: {pin} adds nothing here")
    precision = PINNED[pin]["INFERENCE_PRECISION_HINT"] if pin else default
    suffix = f"-{pin}" if pin else ""
    adapters = f"openvino{suffix}, openvino-halvedhead{suffix}"
    code, records = run_with_fault(HalvedHead, write_scenario(SCENARIO.replace("ADAPTERS", adapters)), tmp_path, pin)
    assert code == 1
    clean = records[f"openvino{suffix}"].same_weights.dequantized_model
    # the floor names the settings the point compiled and ran with, and models them: drift fails
    assert clean.fail_on_drift and f"INFERENCE_PRECISION_HINT {precision}," in clean.floor_method, clean
    assert "DYNAMIC_QUANTIZATION_GROUP_SIZE" in clean.floor_method and "KV cache" in clean.floor_method
    if precision == "bf16":
        assert "every op in bf16" in clean.floor_method
    if pin == "f32-nodq":
        assert "GROUP_SIZE 0," in clean.floor_method and "no dynamic quantization ran" in clean.floor_method
    if pin == "f32":  # on this CPU the measurement says whether an f32 kernel quantized its inputs
        assert "(dynamic quantization ran)" in clean.floor_method or "(dynamic quantization did not run)" in (
            clean.floor_method
        )
    # measured clean: 0.5 to 0.9x at f32 (AVX2), 0.9x at bf16 and 1.0x at f32 with dynamic quantization (AMX Xeon),
    # 1.0x at bf16 with dynamic quantization and at f32 with it (AMD Zen 4, AVX512-bf16 without AMX)
    assert clean.verdict == "pass" and clean.kl_ratio < 2, clean
    broken = records[f"openvino-halvedhead{suffix}"].same_weights.dequantized_model
    assert broken.floor_method == clean.floor_method  # the fault ran on the same path
    assert broken.fail_on_drift and broken.verdict in ("drift", "fail") and broken.kl_ratio > 5, broken
    assert records[f"openvino-halvedhead{suffix}"].verdict == "fail"


F32_RUN = rounding.Settings("f32", 32, frozenset({"brgemm_avx2_f32"}), frozenset({"f16"}), quantized_inputs=False)
BF16_RUN = rounding.Settings("bf16", 32, frozenset({"brgemm_avx512_bf16"}), frozenset({"bf16"}), False)


@pytest.mark.parametrize(
    "device, settings, why",
    [
        ("GPU", F32_RUN, "device GPU"),
        ("CPU", replace(F32_RUN, precision="f16", kernels=frozenset({"brgemm_avx512_f16"})), "f16 ("),
        ("CPU", replace(F32_RUN, kernels=frozenset({"brgemm_avx512_amx_i8"})), "amx_i8"),
        ("CPU", replace(BF16_RUN, kernels=frozenset({"brgemm_avx512_amx_i8"})), "amx_i8"),
        ("CPU", replace(F32_RUN, quantized_inputs=None), "not measured"),
        ("CPU", replace(BF16_RUN, quantized_inputs=None), "not measured"),
        ("CPU", replace(F32_RUN, dynamic_group=0, kv_cache=frozenset({"u8"})), "KV cache"),
        ("CPU", replace(BF16_RUN, dynamic_group=0, kv_cache=frozenset({"u8"})), "KV cache"),
        ("CPU", replace(F32_RUN, dynamic_group=None), "does not report"),
    ],
)
def test_settings_the_model_does_not_cover_keep_the_comparison_report_only(device, settings, why):
    found = rounding.model_of(device, settings)
    assert isinstance(found, str) and why in found


def test_an_f32_run_rounds_the_kv_cache_only():
    found = rounding.model_of("CPU", F32_RUN)
    assert not isinstance(found, str) and found.inputs("i8") is None and found.attention is rounding.f16
    assert found.weights is None and found.activations is None and "did not run" in found.method


def test_an_f32_run_with_dynamic_quantization_rounds_each_compressed_matmuls_input_to_int8_groups():
    import torch

    found = rounding.model_of("CPU", replace(F32_RUN, kernels=frozenset({"brgemm_avx512_f32"}), quantized_inputs=True))
    assert not isinstance(found, str) and found.attention is rounding.f16 and found.weights is None
    assert "int8 per group of 32" in found.method and found.method != rounding.model_of("CPU", F32_RUN).method
    x = torch.from_numpy(np.random.RandomState(0).standard_normal((3, 128)).astype(np.float32))
    got, blocks = found.inputs("i8")(x).numpy().reshape(-1, 32), x.numpy().reshape(-1, 32)
    step = np.abs(blocks).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(got - blocks) <= step / 2 * (1 + 1e-6)) and not np.array_equal(got, blocks)
    assert np.allclose(np.abs(got).max(axis=1), np.abs(blocks).max(axis=1), rtol=1e-6)  # each group's peak kept
    assert np.allclose(np.round(got / step), got / step, atol=1e-3)  # on the int8 grid of its group


def test_a_bf16_run_with_dynamic_quantization_rounds_in_bf16_then_each_compressed_matmuls_input_to_int8_groups():
    """A bf16 kernel that quantizes its input (AVX512-bf16 without AMX, e.g. AMD Zen 4): bf16 throughout, and the
    compressed matmuls' inputs on top, so the floor is not the plain bf16 one's (stored references differ)."""
    found = rounding.model_of("CPU", replace(BF16_RUN, quantized_inputs=True))
    assert not isinstance(found, str), found
    assert found.weights is found.activations is found.attention is rounding.bf16 and found.inputs("i8") is not None
    assert "every op in bf16" in found.method and "bf16 input then as symmetric int8 per group of 32" in found.method
    assert "(dynamic quantization ran)" in found.method and found.method != rounding.model_of("CPU", BF16_RUN).method


@pytest.mark.parametrize(
    "kernels", [{"brgemm_avx512_bf16"}, {"brgemm_avx512_amx_bf16"}], ids=["avx512-bf16", "amx-bf16"]
)
def test_a_bf16_run_rounds_every_weight_and_activation(kernels):
    found = rounding.model_of("CPU", replace(BF16_RUN, kernels=frozenset(kernels)))
    assert not isinstance(found, str), found
    assert found.weights is found.activations is found.attention is rounding.bf16 and found.inputs("i8") is None
    assert "INFERENCE_PRECISION_HINT bf16" in found.method and "every op in bf16" in found.method
    f16_cache = rounding.model_of("CPU", replace(BF16_RUN, kernels=frozenset(kernels), kv_cache=frozenset({"f16"})))
    assert f16_cache.attention is rounding.bf16_then_f16 and "then f16 (the KV cache)" in f16_cache.method
    assert f16_cache.method != found.method != rounding.model_of("CPU", F32_RUN).method  # stored references differ


def test_the_bf16_model_rounds_weights_and_the_tensors_between_ops(tiny_llama):
    """(torch only) HF fp32 with the bf16 model installed: every weight, each decoder layer's input and the
    logits are bf16 values; without it they are not."""
    import torch
    from transformers import AutoModelForCausalLM

    from harness.adapters.hf.rounded import install

    def bf16_valued(t):
        return torch.equal(t, t.bfloat16().float())

    model = AutoModelForCausalLM.from_pretrained(str(tiny_llama.hf_dir), dtype=torch.float32)
    seen = []
    model.model.layers[1].register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    ids = torch.tensor([[1, 5, 9, 13]])
    with torch.no_grad():
        plain = model(ids).logits
    assert not bf16_valued(plain) and not bf16_valued(seen[-1]) and not bf16_valued(model.lm_head.weight)
    install(model, {}, rounding.model_of("CPU", BF16_RUN))
    with torch.no_grad():
        rounded = model(ids).logits
    assert bf16_valued(rounded) and bf16_valued(seen[-1]), "the logits and the residual stream leave ops in bf16"
    assert all(bf16_valued(p) for p in model.parameters() if p.dim() == 2)
    assert not torch.equal(plain, rounded)


def test_a_matmul_that_quantizes_its_input_takes_it_in_bf16_then_int8_and_keeps_its_stored_weight(tiny_llama):
    """(torch only) bf16 with dynamic quantization: a compressed Linear's input is first a bf16 tensor, then on
    its groups' int8 grid; its weight stays as stored (integers times their scales), every other one is bf16."""
    import torch
    from transformers import AutoModelForCausalLM

    from harness.adapters.hf.rounded import install
    from harness.models.stored_weights import Tensor

    model = AutoModelForCausalLM.from_pretrained(str(tiny_llama.hf_dir), dtype=torch.float32)
    down = model.model.layers[0].mlp.down_proj
    stored = {"model.layers.0.mlp.down_proj.weight": Tensor("w", "i8", down.weight.detach().numpy())}
    before = down.weight.detach().clone()
    assert install(model, stored, rounding.model_of("CPU", replace(BF16_RUN, quantized_inputs=True))) == 1
    seen = []
    down.register_forward_pre_hook(lambda module, args: seen.append(args[0]))  # after the model's own hooks
    with torch.no_grad():
        model(torch.tensor([[1, 5, 9, 13]]))
    x = seen[-1].reshape(-1, 32)
    step = x.abs().amax(dim=1, keepdim=True) / 127
    assert torch.allclose(torch.round(x / step), x / step, atol=1e-3), "on the int8 grid of each group"
    peaks = x.abs().amax(dim=1)
    assert torch.equal(peaks, peaks.bfloat16().float()), "each group's peak is a bf16 value: bf16 came first"
    assert torch.equal(down.weight, before) and not torch.equal(before, before.bfloat16().float())
    up = model.model.layers[0].mlp.up_proj.weight
    assert torch.equal(up, up.bfloat16().float())
