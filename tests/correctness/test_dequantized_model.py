"""The dequantized-model comparison (#29): a quantized llama.cpp point against HF transformers (fp32)
running the GGUF's own weights, dequantized, through ``harness run`` / ``harness verify``.

Its floor imitates llama.cpp's CPU rounding (``harness.adapters.llamacpp.rounding``: each quantized
matmul's input as Q8_0 or Q8_K, Q/K/V in f16), so clean points sit at 1.0x it whatever their weights
(Q8_0, Q4_0, Q4_1, Q4_K_M), and drift fails the point. A kernel-class fault of llama.cpp's CPU backend,
which the same-weights twin runs too and so shares, is small enough to pass as quantization drift against
HF and agrees with its twin; against the dequantized weights on another engine it fails (8.9x).
"""

from __future__ import annotations

import dataclasses
import re
import types
from contextlib import contextmanager
from importlib.util import find_spec

import numpy as np
import pytest

from harness.cli import main
from harness.records.store import iter_records
from tests.conftest import registered

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 8, prompts: 4}
sweep:
  adapter: [ADAPTERS]
  device: [cpu]
  quantization: [QUANT]
"""

SCALE = 0.2  # the fault's size: logits off by a few tenths at most, as from a wrong tile of the output matmul


def perturbed(logits: np.ndarray) -> np.ndarray:
    """A fixed error on a quarter of the vocabulary's logits (seeded: the same at every position)."""
    rng = np.random.RandomState(0)
    error = rng.standard_normal(logits.shape[-1]).astype(np.float32) * (rng.rand(logits.shape[-1]) < 0.25)
    return logits + SCALE * error


def kernel_fault():
    from harness.adapters.llamacpp import LlamaCppAdapter
    from harness.adapters.llamacpp.twin import LlamaSteps

    def faulty_logits(steps):
        return perturbed(LlamaSteps._logits(steps))

    class SharedKernelFault(LlamaCppAdapter):
        """llama.cpp's CPU backend off on some logits: on the gated path and on the twin, which runs the
        same backend (its reference is its own: the key says so)."""

        name = "llamacpp-kernel-fault"

        def _logits(self):
            return faulty_logits(self)

        def trusted_twin(self):
            twin = super().trusted_twin()

            @contextmanager
            def open_steps(variant):
                with twin.open(variant) as steps:
                    steps._logits = types.MethodType(faulty_logits, steps)
                    yield steps

            return dataclasses.replace(twin, key=f"{twin.key}/kernel-fault-{SCALE}", open=open_steps)

    return SharedKernelFault


@pytest.fixture
def fault():
    yield from registered((kernel_fault(),))


def test_a_shared_kernel_fault_fails_against_the_dequantized_weights_and_the_engines_rounding(
    write_scenario, tmp_path, capsys, fault
):
    (cls,) = fault
    path = write_scenario(SCENARIO.replace("ADAPTERS", f"llamacpp, {cls.name}").replace("QUANT", "int8_sym"))
    assert main(["run", str(path), "--results", str(tmp_path), "--isolation", "none"]) == 1  # the fault fails
    capsys.readouterr()
    code = main(["verify", str(path), "--results", str(tmp_path), "--isolation", "none"])  # references reused
    out = capsys.readouterr().out
    records = {r.point["adapter"]: r.correctness for _, r in iter_records(tmp_path)}
    clean, broken = records["llamacpp"], records[cls.name]
    print(out)

    assert code == 1, out
    model = clean.same_weights.dequantized_model
    assert clean.verdict in ("pass", "drift") and model.verdict == "pass", (clean.reasons, model)
    assert model.fail_on_drift and "rounding as the engine does: llama.cpp CPU rounding v1" in model.floor_method
    assert model.kl_ratio < 2 and model.phases.prefill.kl_ratio < 2 and model.phases.decode.kl_ratio < 2
    # Against HF bf16 the clean point pays the quantization cost; against its own dequantized weights it does not.
    assert model.kl_ratio < clean.kl_ratio
    assert re.search(
        r"^(PASS |DRIFT)  scenario::llamacpp-cpu-int8_sym: .*\n +same weights \(dequantized, transformers\): KL \d\.\dx floor \(pass\)$",
        out,
        re.M,
    ), out
    assert re.search(
        r"^FAIL   scenario::llamacpp-kernel-fault-cpu-int8_sym: .*\n +same weights \(dequantized, transformers\): KL \d+\.\dx floor \(fail\)$",
        out,
        re.M,
    ), out

    found = broken.same_weights
    assert found.verdict == "pass"  # the twin runs the same faulty backend and agrees
    assert found.model_verdict in ("pass", "drift")  # against HF bf16 it hides in the quantization cost
    assert found.dequantized.verdict == "pass"  # the weights are the checkpoint's
    assert found.dequantized_model.verdict == "fail" and broken.verdict == "fail", found
    assert any("drift fails this point" in r for r in broken.reasons), broken.reasons
    assert found.dequantized_model.kl_ratio > 3 * model.kl_ratio  # the kernel fault, apart from the engine's rounding


def test_clean_4_bit_points_sit_at_the_engines_rounding(write_scenario, tmp_path):
    """Q4_0 (Q8_0 inputs) and Q4_1 (Q8_1 inputs): tiny-llama is too small for 4 bits, so against HF bf16
    both fail on their weights; against those very weights with llama.cpp's rounding they pass."""
    path = write_scenario(SCENARIO.replace("ADAPTERS", "llamacpp").replace("QUANT", "int4_sym, int4_asym"))
    assert main(["verify", str(path), "--results", str(tmp_path), "--isolation", "none"]) == 1  # the 4-bit cost
    records = {r.point["quantization"]: r.correctness for _, r in iter_records(tmp_path)}
    for quantization, found in records.items():
        model = found.same_weights.dequantized_model
        print(quantization, found.kl_ratio, model.kl_ratio, model.verdict)
        assert found.verdict == "fail" and found.same_weights.model_verdict == "fail", quantization
        assert model.verdict == "pass" and model.fail_on_drift and model.kl_ratio < 5, (quantization, model)


@pytest.fixture(scope="module")
def wide_llama(tiny_llama, tmp_path_factory):
    """tiny-llama 256 wide (rows a multiple of 256, so llama.cpp's quantizer can write K-quants), seeded."""
    import json
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    path = tmp_path_factory.mktemp("model") / "tiny-llama-wide"
    shutil.copytree(tiny_llama.hf_dir, path, ignore=shutil.ignore_patterns("harness-*", "*.safetensors"))
    config = json.loads((path / "config.json").read_text())
    config.update(hidden_size=256, intermediate_size=512, head_dim=64)
    (path / "config.json").write_text(json.dumps(config))
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path)).save_pretrained(path)
    return path


def test_a_clean_k_quant_point_sits_at_the_engines_rounding(write_scenario, tmp_path, wide_llama, monkeypatch):
    """Q4_K_M (Q4_K and Q6_K weights: Q8_K inputs in blocks of 256), the default model's own format."""
    from harness.adapters.llamacpp import gguf_files

    # The quantization axis names no K-quant: its int4_sym level makes a Q4_K_M GGUF here.
    monkeypatch.setitem(gguf_files.FTYPES, "int4_sym", ("MOSTLY_Q4_K_M", "Q4_K_M"))
    text = SCENARIO.replace("ADAPTERS", "llamacpp").replace("QUANT", "int4_sym")
    path = write_scenario(text.replace("model: tiny-llama", f"model: {{source: {wide_llama}}}"))
    main(["verify", str(path), "--results", str(tmp_path), "--isolation", "none"])
    ((_, record),) = list(iter_records(tmp_path))
    found = record.correctness
    model = found.same_weights.dequantized_model
    print(found.verdict, found.kl_ratio, model.kl_ratio, model.verdict, record.engine.extra.get("quantization_detail"))
    assert set(record.engine.extra["quantization_detail"]) >= {"Q4_K", "Q6_K"}
    assert found.same_weights.dequantized.verdict == "pass"
    assert model.verdict == "pass" and model.fail_on_drift and model.kl_ratio < 5, model


def test_the_activation_rounding_is_ggmls():
    """(unit) Q8_0 inputs round as gguf-py's Q8_0 round trip (ggml's quantize_row_q8_0); Q8_K keeps each
    256-block's largest input exact and every other within half its step (absmax/127)."""
    import gguf
    import torch
    from gguf.quants import dequantize, quantize

    from harness.adapters.llamacpp import rounding

    x = np.random.RandomState(0).standard_normal((8, 1024)).astype(np.float32)
    kind = gguf.GGMLQuantizationType.Q8_0
    assert np.array_equal(rounding.q8_0(torch.from_numpy(x)).numpy(), dequantize(quantize(x, kind), kind))
    got, blocks = rounding.q8_k(torch.from_numpy(x)).numpy().reshape(-1, 256), x.reshape(-1, 256)
    step = np.abs(blocks).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(got - blocks) <= step / 2 * (1 + 1e-6)) and not np.array_equal(got, blocks)
    peaks = np.abs(blocks).argmax(axis=1)
    assert np.allclose(got[np.arange(len(got)), peaks], blocks[np.arange(len(got)), peaks], rtol=1e-6)
    assert rounding.input_rounding("Q4_K") is rounding.q8_k and rounding.input_rounding("Q5_0") is rounding.q8_0
    assert rounding.input_rounding("F32") is None and isinstance(rounding.model_of({"Q4_K", "XYZ"}), str)
