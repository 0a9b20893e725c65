"""The engine's own text path and batch invariance through ``harness verify`` / ``harness run`` on real
tiny engines: llama.cpp (its tokenizer and its chat API, on a GGUF the harness exports) and transformers
(batched logits). Input-path faults fail the point; the clean points pass."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from harness.adapters.hf import HFAdapter
from harness.cli.app import main
from tests.conftest import registered

pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install -e '.[llamacpp]'")

from harness.adapters.llamacpp import LlamaCppAdapter  # noqa: E402


class SquashedSpaces(LlamaCppAdapter):
    """A tokenizer that strips repeated spaces before tokenizing (a normaliser port gone wrong)."""

    name = "llamacpp-squashed"

    def tokenize(self, text, add_special=True):
        return super().tokenize(re.sub(r" {2,}", " ", text), add_special)


class Llama2Chat(LlamaCppAdapter):
    """The chat API on llama-cpp-python's llama-2 format, as for a GGUF that carries no template."""

    name = "llamacpp-llama2"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.llm.chat_format = "llama-2"
        self.llm._chat_handlers.pop("llama-2", None)


class MixedBatch(HFAdapter):
    """A batch whose rows come back shifted by one: each sequence gets its neighbour's logits."""

    name = "hf-mixed-batch"

    def prefill_batch(self, prompts):
        return np.roll(super().prefill_batch(prompts), 1, axis=0)


FAULTS = (SquashedSpaces, Llama2Chat, MixedBatch)

SCENARIO = """
model: MODEL
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {k: 5, tokens: 8, prompts: 8}
sweep:
  adapter: [ADAPTERS]
"""


@pytest.fixture
def faults():
    yield from registered(FAULTS)


def verify(write_scenario, tmp_path, reference_dir, model, adapters, extra=""):
    text = SCENARIO.replace("MODEL", str(model)).replace("ADAPTERS", ", ".join(adapters))
    text = extra + text if extra.startswith("adapter_options") else text + extra
    path = write_scenario(text)
    argv = ["verify", str(path), "--results", str(tmp_path / "results"), "--isolation", "none"]
    return main([*argv, "--reference-dir", str(reference_dir)])


def lines(out: str) -> dict[str, str]:
    """Each point's verify line (PASS/FAIL/...), not the run's closing verdict lines (FAILED ...) after them."""
    found: dict[str, str] = {}
    for m in re.finditer(r"^\w+ +scenario::(\S+):.*$", out, re.M):
        found.setdefault(m.group(1), m.group(0))
    return found


def test_clean_llamacpp_passes_every_text_check_and_faults_on_the_input_path_fail(
    write_scenario, tmp_path, reference_dir, capsys, faults, chat_model
):
    code = verify(
        write_scenario, tmp_path, reference_dir, chat_model, ["llamacpp", "llamacpp-squashed", "llamacpp-llama2"]
    )
    out = capsys.readouterr().out
    found = lines(out)
    assert code == 1
    clean = found["llamacpp-cpu-f16"]
    # Before the export wrote tokenizer.chat_template, llama-cpp-python fell back to llama-2 here: chat fail.
    assert clean.startswith("PASS ") and "text path: tok pass, chat pass, text pass, batch -" in clean, out
    squashed = found["llamacpp-squashed-cpu-f16"]
    # The gate feeds the reference's ids, so on its own it passes this point; the text path does not.
    assert squashed.startswith("FAIL ") and "tok fail" in squashed and "text fail" in squashed, out
    assert "the engine's tokenizer disagrees with the reference on" in out
    assert "right: reference" in out  # the GGUF was exported from the reference checkpoint
    assert "diagnosis: input ids depart from the reference's (prompt 6)" in out  # the indented code prompt
    llama2 = found["llamacpp-llama2-cpu-f16"]
    assert llama2.startswith("FAIL ") and "chat fail" in llama2 and "tok pass" in llama2, out
    assert "the engine's chat template (llama-2" in out and "[INST]" in out


def test_batch_invariance_fails_a_batch_that_mixes_sequences(
    write_scenario, tmp_path, reference_dir, capsys, faults, tiny_llama
):
    code = verify(
        write_scenario, tmp_path, reference_dir, "tiny-llama", ["hf", "hf-mixed-batch"], "  batch_size: [1, 2]\n"
    )
    found = lines(capsys.readouterr().out)
    assert code == 1
    assert found["hf-cpu-bf16-bs1"].startswith("PASS ") and "batch -" in found["hf-cpu-bf16-bs1"]
    assert found["hf-cpu-bf16-bs2"].startswith("PASS ") and "batch pass" in found["hf-cpu-bf16-bs2"]
    assert found["hf-mixed-batch-cpu-bf16-bs1"].startswith("PASS ")  # batch 1: nothing batched
    mixed = found["hf-mixed-batch-cpu-bf16-bs2"]
    assert mixed.startswith("FAIL ") and "batch fail" in mixed, mixed


def test_the_record_says_which_checks_ran_and_why_others_did_not(write_scenario, tmp_path, tiny_llama):
    path = write_scenario(SCENARIO.replace("MODEL", "tiny-llama").replace("ADAPTERS", "hf, llamacpp"))
    results = tmp_path / "results"
    assert main(["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress"]) == 0
    records = {
        r["point_id"]: r for r in map(json.loads, (p.read_text() for p in results.rglob("*.json"))) if "point_id" in r
    }
    hf = records["hf-cpu-bf16"]["correctness"]["text_path"]
    assert (
        hf["tokenizer"]["skipped"]
        == "hf exposes no tokenizer of its own (Adapter.tokenize): the harness's ids are all it was fed"
    )
    assert hf["batch"]["skipped"] == "batch_size 1: nothing batched"
    llama = records["llamacpp-cpu-f16"]["correctness"]["text_path"]
    assert llama["tokenizer"]["verdict"] == "pass" and llama["tokenizer"]["strings"] > 20
    assert llama["tokenizer"]["vocabulary"]["tokenizer.ggml.pre"] == "gpt-2"
    # tiny-llama has no chat template: nothing to compare llama.cpp's (its llama-2 fallback) with
    assert llama["chat_template"]["skipped"].startswith("the reference checkpoint has no chat template")
    assert "llama-2" in llama["chat_template"]["engine_template"]
    assert llama["free_text"]["verdict"] == "pass" and len(llama["free_text"]["lengths"]) == 8


def sentencepiece_gguf(path):
    """A vocabulary-only SentencePiece GGUF (as Gemma's): bytes, "a", "b", "▁", "▁b" and a whitespace run
    "  " that is user-defined, stored with real spaces and scored low, as in Gemma 3's GGUF."""
    import gguf

    pieces = [("<pad>", 0.0, 3), ("<eos>", 0.0, 3), ("<bos>", 0.0, 3), ("<unk>", 0.0, 2)]
    pieces += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    pieces += [("a", -1.0, 1), ("b", -1.1, 1), ("\u2581", -1.2, 1), ("\u2581b", -1.3, 1), ("  ", -1000.0, 4)]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_feed_forward_length(8)
    writer.add_head_count(1)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([p[0] for p in pieces])
    writer.add_token_scores([p[1] for p in pieces])
    writer.add_token_types([p[2] for p in pieces])
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_whitespace_runs_of_a_sentencepiece_gguf_split_as_sentencepiece_and_llama_cpp_split_them(tmp_path):
    """Measured on Gemma 3 270M: the reference tokenizer rebuilt from the GGUF split "two  spaces" as
    "two", "▁", "▁spaces"; llama.cpp and SentencePiece (the GGUF's vocabulary decides) as "two", "▁▁",
    "spaces". The rebuilt tokenizer now matches whitespace runs whole, as they do."""
    from types import SimpleNamespace

    import llama_cpp
    from gguf import GGUFReader

    from harness.correctness import vocabulary
    from harness.models.gguf_convert import spm_tokenizer_from_gguf

    path = sentencepiece_gguf(tmp_path / "spm.gguf")
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    engine = llm.tokenize(b"a  b", add_bos=True, special=True)
    rebuilt, _ = spm_tokenizer_from_gguf(GGUFReader(str(path)))
    assert engine == [2, 260, 264, 261]  # <bos> a "  " b
    assert rebuilt.encode("a  b").ids == engine  # before the fix: [2, 260, 262, 263] (a ▁ ▁b)
    adapter = SimpleNamespace(supports_tokenize=True, describe=lambda: {"gguf": str(path)})
    decide, found = vocabulary.arbiter(adapter, SimpleNamespace(gguf_path=path))
    assert found["tokenizer.ggml.model"] == "llama" and found["source"] == "the model's own GGUF"
    assert decide("a  b", engine, [2, 260, 262, 263])[0] == "engine"
    assert decide("a  b", [2, 260, 262, 263], engine)[0] == "reference"


def test_the_chat_template_option_gives_llama_cpp_the_checkpoints_template(
    write_scenario, tmp_path, reference_dir, capsys, faults, chat_model
):
    """``adapter_options: {llamacpp: {chat_template: checkpoint}}`` (the quickstart's, for the Gemma GGUF that
    carries none) replaces whatever llama-cpp-python picked: the llama-2 point now passes its chat check."""
    extra = "adapter_options: {llamacpp-llama2: {chat_template: checkpoint}}\n"
    code = verify(write_scenario, tmp_path, reference_dir, chat_model, ["llamacpp-llama2"], extra)
    line = lines(capsys.readouterr().out)["llamacpp-llama2-cpu-f16"]
    assert code == 0 and line.startswith("PASS ") and "chat pass" in line, line
