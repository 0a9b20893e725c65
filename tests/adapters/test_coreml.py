"""The ``coreml`` adapter: the static-shape rewrite checked against transformers (directly and through
the gate), and the converted ML program's functions, inputs, states and precision."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("coremltools", reason="coremltools not installed: pip install -e '.[coreml]'")

from harness.adapters.coreml import CoreMLAdapter, convert  # noqa: E402

PROMPT = [1, 40, 77, 123, 9, 300, 41]


@pytest.fixture(scope="module")
def hf_tiny(tiny_llama):
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_llama.hf_dir), dtype=torch.float32).eval()


@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_chunked_static_model_matches_transformers(hf_tiny, chunk):
    import torch

    from harness.adapters.coreml.static import StaticLlama, StaticRunner

    runner = StaticRunner(StaticLlama(hf_tiny, 32, cache_dtype=torch.float32).eval(), chunk=chunk, pad_token_id=2)
    ours = [runner.prefill(PROMPT), runner.decode(5), runner.decode(17)]
    with torch.no_grad():
        theirs = hf_tiny(torch.tensor([PROMPT + [5, 17]])).logits[0].numpy()[len(PROMPT) - 1 :]
    np.testing.assert_allclose(np.stack(ours), theirs, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def package(tiny_llama, tmp_path_factory):
    return convert(tiny_llama.hf_dir, max_seq_len=64, chunk=8, out=tmp_path_factory.mktemp("coreml") / "tiny.mlpackage")


def _array_type(ct, feature):
    return ct.proto.FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(feature)


def test_package_has_prefill_and_infer_sharing_fp16_kv_states(package):
    import coremltools as ct

    spec = ct.utils.load_spec(str(package))
    functions = {f.name: f for f in spec.description.functions}
    assert set(functions) == {"prefill", "infer"} and spec.description.defaultFunctionName == "infer"
    for name, width in (("prefill", 8), ("infer", 1)):
        f = functions[name]
        inputs = {
            i.name: (list(i.type.multiArrayType.shape), _array_type(ct, i.type.multiArrayType.dataType))
            for i in f.input
        }
        assert inputs == {
            "input_ids": ([1, width], "INT32"),
            "positions": ([width], "INT32"),
            "causal_mask": ([1, 1, width, 64], "FLOAT16"),
        }
        states = {
            s.name: (list(s.type.stateType.arrayType.shape), _array_type(ct, s.type.stateType.arrayType.dataType))
            for s in f.state
        }
        assert states == {"k_cache": ([2, 2, 64, 16], "FLOAT16"), "v_cache": ([2, 2, 64, 16], "FLOAT16")}
        assert [(o.name, _array_type(ct, o.type.multiArrayType.dataType)) for o in f.output] == [("logits", "FLOAT16")]


def test_program_writes_the_kv_state_and_computes_in_fp16(package):
    import coremltools as ct

    spec = ct.utils.load_spec(str(package))
    for name in ("prefill", "infer"):
        function = spec.mlProgram.functions[name]
        ops = function.block_specializations[function.opset].operations
        kinds = {op.type for op in ops}
        assert {"read_state", "write_state"} <= kinds  # the KV cache is state, not an input/output
        linear = [op for op in ops if op.type == "linear"]
        assert len(linear) == 2 * 7 + 1  # q, k, v, o, gate, up, down per layer + lm_head
        assert {ct.proto.MIL_pb2.DataType.Name(op.outputs[0].type.tensorType.dataType) for op in linear} == {"FLOAT16"}


def test_devices_map_to_compute_units_and_skip_off_macos():
    from harness.adapters.coreml import COMPUTE_UNITS

    assert COMPUTE_UNITS == {"ane": "CPU_AND_NE", "gpu": "CPU_AND_GPU", "cpu": "CPU_ONLY", "all": "ALL"}
    import sys

    if sys.platform != "darwin":
        assert "runs on macOS 15+ only" in CoreMLAdapter.device_reason("ane")
    assert CoreMLAdapter.device_reason("torch-static") is None


SCENARIO = """
model: tiny-llama
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
gate: {k: 5, tokens: 8, prompts: ci}
sweep:
  adapter: [coreml]
  device: [torch-static, ane]
  max_seq_len: [128]
  moe_chunk_size: [4]
"""


def test_the_static_source_passes_the_gate_and_ane_points_skip(write_scenario, tmp_path):
    from harness.run import planning
    from harness.run.runner import Runner
    from harness.run.settings import RunSettings
    from harness.scenario.sweep import expand

    loaded = planning.load(write_scenario(SCENARIO))
    runner = Runner(RunSettings(results_dir=tmp_path / "results", energy=False))
    static, ane = [runner.run_point(loaded, point) for point in expand(loaded)]
    assert static.status == "ok", static.reason
    assert static.engine.emulated is True
    assert static.correctness.verdict == "pass", static.correctness.report
    assert static.metrics["engine_prefill_padded_tokens"] >= static.metrics["prompt_tokens"]
    assert 0 <= static.metrics["engine_padding_waste"] < 1
    import sys

    if sys.platform != "darwin":
        assert ane.status == "skipped" and "macOS 15+" in ane.reason
