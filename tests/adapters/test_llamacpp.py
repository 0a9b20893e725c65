"""The ``llamacpp`` adapter on real llama.cpp: a tiny checkpoint through llama.cpp's own converter, its quantizer,
the gate against transformers, per-token timing beside llama.cpp's own counters."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install -e '.[llamacpp]'")

from harness.adapters.llamacpp import converter  # noqa: E402
from harness.run import planning
from harness.run.runner import Runner  # noqa: E402
from harness.run.settings import RunSettings  # noqa: E402
from harness.scenario import schema
from harness.scenario.sweep import expand  # noqa: E402

TINY = """
model: tiny-llama
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 8}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
gate: {k: 5, tokens: 8, prompts: ci}
sweep:
  adapter: [llamacpp]
  quantization: [none, int8_sym, int4_sym, int4_asym]
"""


@pytest.fixture(scope="module")
def tiny_records(tmp_path_factory, cache_dir):
    loaded = planning.loads(TINY, "<tiny>", "tiny_llamacpp")
    runner = Runner(RunSettings(results_dir=tmp_path_factory.mktemp("results"), cache_dir=cache_dir, energy=False))
    return {point.quantization: runner.run_point(loaded, point) for point in expand(loaded)}


def test_an_hf_checkpoint_is_converted_to_gguf_by_llama_cpp_and_matches_transformers(tiny_records):
    record = tiny_records["none"]
    assert record.status == "ok", record.reason
    assert record.engine.extra["converter"]["converter"] == converter.identity()
    assert record.engine.extra["file_type"] == "MOSTLY_F16"
    assert record.engine.extra["quantization_detail"] == {"F16": 16, "F32": 5}
    assert record.engine.threads == 2 and "n_threads" not in record.engine.extra  # one spelling, every engine
    assert record.engine.options == {"chat_template": None, "extra_buffer_types": None}  # the defaults it got
    assert record.correctness.verdict == "pass", record.correctness.report


@pytest.mark.parametrize(
    "source", ["tiny-llama", "tiny-qwen2", "tiny-gemma3-text", "tiny-mistral", "tiny-phi3", "tiny-mixtral"]
)
def test_converted_gguf_logits_match_transformers_at_every_position(source, cache_dir):
    """The F16 GGUF the adapter converts (from the cache: the architecture matrix runs these points too)
    against transformers in fp32. F16 weights move these logits by up to 0.023; a wrong Q/K permutation or
    a dropped bias moves them by order 1."""
    import llama_cpp
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from harness.adapters.llamacpp import gguf_files
    from harness.models import sources

    tiny = sources.resolve(schema.ModelSpec(source=source), cache_dir)
    ids = [1, 40, 77, 123, 9, 300, 41, 5, 17]
    hf = AutoModelForCausalLM.from_pretrained(str(tiny.hf_dir), dtype=torch.float32).eval()
    with torch.no_grad():
        reference = hf(torch.tensor([ids])).logits[0].numpy()
    path = gguf_files.converted(tiny, cache_dir)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, logits_all=True, verbose=False)
    llm.eval(ids)
    ours = np.array(llm.scores[: len(ids)])
    llm.close()
    tolerance = 0.05
    assert np.abs(ours - reference).max() < tolerance
    # the same next token wherever the reference's top two are further apart than the two can move together
    top2 = np.sort(reference, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * tolerance
    assert clear.sum() >= len(ids) // 2 and (ours.argmax(-1) == reference.argmax(-1))[clear].all()


def test_levels_come_from_llama_cpps_quantizer(tiny_records):
    expected = {"int8_sym": "Q8_0", "int4_sym": "Q4_0", "int4_asym": "Q4_1"}
    for level, ggml_type in expected.items():
        record = tiny_records[level]
        assert record.status == "ok", record.reason
        assert ggml_type in record.engine.extra["quantization_detail"], record.engine.extra["quantization_detail"]
        assert record.engine.extra["file_type"] == f"MOSTLY_{ggml_type}"
        assert record.correctness.verdict in ("pass", "drift", "fail")
    from harness.adapters.llamacpp import LlamaCppAdapter
    from harness.scenario.sweep import Point

    asym8 = Point(adapter="llamacpp", device="cpu", quantization="int8_asym", id="x")
    assert "does not support quantization 'int8_asym'" in LlamaCppAdapter.capability_reason(asym8)


def test_timing_and_engine_counters_are_recorded_side_by_side(tiny_records):
    metrics = tiny_records["none"].metrics
    assert metrics["generated_tokens"] == 8
    assert metrics["tpot_ms"] > 0 and metrics["engine_tpot_ms"] > 0
    assert metrics["engine_tpot_ms"] <= metrics["tpot_ms"] * 1.5  # llama.cpp times eval only, we add sampling


def test_an_already_quantized_gguf_is_not_quantized_again(cache_dir, tmp_path):
    loaded = planning.loads(
        """
model: gemma3-270m
generation: {max_new_tokens: 4}
sweep: {adapter: [llamacpp], quantization: [int8_sym]}
""",
        "<gguf>",
        "requant",
    )
    (point,) = expand(loaded)
    record = Runner(RunSettings(results_dir=tmp_path, cache_dir=cache_dir, energy=False)).run_point(loaded, point)
    assert record.status == "skipped"
    assert "already quantized (MOSTLY_Q4_K_M)" in record.reason and "F32/F16/BF16" in record.reason


def test_a_prompt_longer_than_the_default_context_gets_room(cache_dir, tmp_path):
    """A 4096-token prompt plus its output once overflowed llama.cpp's default 4096-token KV cache
    (``llama_decode returned 1``); without max_seq_len the context now fits prompt and output."""
    text = TINY.replace('prompts: ["The river", "A bakery on the corner"]', "")
    text = text.replace("generation: {max_new_tokens: 8}", "generation: {max_new_tokens: 4}")
    text = text.replace("gate: {k: 5, tokens: 8, prompts: ci}\n", "")
    text = text.replace("quantization: [none, int8_sym, int4_sym, int4_asym]", "prompt_len: [4096]")
    loaded = planning.loads(text, "<long>", "long_prompt")
    (point,) = expand(loaded)
    record = Runner(RunSettings(results_dir=tmp_path, cache_dir=cache_dir, energy=False)).run_point(loaded, point)
    assert record.status == "ok", record.reason
    assert record.engine.extra["n_ctx"] >= 4096 + 4 and record.metrics["prompt_tokens"] == 4096


def test_extra_buffer_types_are_off_on_amx_cpus_unless_the_scenario_asks():
    # llama-cpp-python 0.3.36 segfaults in its first eval with AMX/repacked buffers on an amx_int8 Xeon
    # (the whole pytest process died here before this was turned off).
    from harness.adapters.llamacpp import extra_buffer_types

    assert extra_buffer_types(None, ["avx2", "amx_int8"])[0] is False
    assert "segfaults" in extra_buffer_types(None, ["amx_int8"])[1]
    assert extra_buffer_types(None, ["avx2", "avx512f"]) == (True, "on: llama.cpp's default")
    assert extra_buffer_types(True, ["amx_int8"])[0] is True


def test_the_record_says_which_buffer_types_ran(tiny_records):
    from harness.records.environment import cpu_flags

    extra = tiny_records["none"].engine.extra
    assert extra["extra_buffer_types"] is ("amx_int8" not in cpu_flags())
    assert extra["extra_buffer_types_why"]


def test_two_checkpoints_of_one_size_get_their_own_quantized_gguf(cache_dir, tmp_path):
    """Every converted GGUF is ``model.gguf``: its quantized copy was cached as ``model-<size>-Q8_0``, so a second
    checkpoint of the same size (another seed) ran the first one's weights."""
    from harness.adapters.llamacpp import LlamaCppAdapter
    from harness.models import sources

    adapter = LlamaCppAdapter()
    adapter._figures = {}
    quantized = []
    for seed in (0, 1):
        model = sources.resolve(schema.ModelSpec(source="tiny-llama", seed=seed), cache_dir)
        source = adapter._source_gguf(model, tmp_path)
        quantized.append(adapter._quantized(source, "int8_sym", 2, tmp_path))
    first, second = quantized
    assert first.stat().st_size == second.stat().st_size and first.read_bytes() != second.read_bytes()
