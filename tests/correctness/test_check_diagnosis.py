"""A failure of a check beside the gate (text path, stopping) gets a diagnosis that names the failed check:
a tokenizer that splits only strings the gate's prompts lack is named as the tokenizer (it used to read "chat
template, detokenizer, batch"); differing input ids are named first; the gate's own finding is kept."""

from __future__ import annotations

from harness.correctness.check_diagnosis import of_failed_checks
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records.gate_diagnosis import Diagnosis


def reference() -> Reference:
    prompts = [PromptReference("plain", text, ids, [5, 6], [], []) for text, ids in (("a b", [1, 2]), ("c", [3]))]
    return Reference(model={}, settings={"tokens": 2}, versions={}, noise_floor={"kl_mean": 1e-3}, prompts=prompts)


def same(index: int) -> list[int]:
    return list(reference().prompts[index].prompt_ids)


def test_a_tokenizer_failure_with_agreeing_input_ids_names_the_tokenizer():
    found, line = of_failed_checks(None, ["tokenizer"], same, reference())
    assert found.failed_checks == ["tokenizer"] and found.departs_at is None
    assert found.not_run.endswith("the fault lies where the failed check looked: the tokenizer")
    assert "agree with the reference's on every gate prompt" in found.not_run
    assert line == f"diagnosis: {found.not_run}"
    # A stopping failure after it: the one diagnosis names both checks.
    both, _ = of_failed_checks(found, ["stopping"], same, reference())
    assert both.failed_checks == ["tokenizer", "stopping"]
    assert both.not_run.endswith("the failed checks looked: the tokenizer, stopping (EOS / end of turn)")


def test_each_failed_check_is_named():
    found, _ = of_failed_checks(None, ["chat_template", "free_text", "batch"], same, reference())
    assert found.not_run.endswith(
        "the chat template, the detokenizer or text API (free-running text), the batch (padding or mixed sequences)"
    )


def test_differing_input_ids_are_named_before_the_checks():
    found, line = of_failed_checks(None, ["tokenizer"], lambda i: [9] if i == 1 else same(i), reference())
    assert found.departs_at == "input ids" and found.prompt == 1 and found.failed_checks == ["tokenizer"]
    assert found.where() == "input ids (prompt 1)"
    assert line == "diagnosis: input ids depart from the reference's (prompt 1)"


def test_an_engine_without_a_tokenizer_is_not_said_to_agree():
    found, _ = of_failed_checks(None, ["batch"], None, reference())
    assert "it was fed the reference's ids" in found.not_run and "agree" not in found.not_run


def test_the_gates_own_diagnosis_keeps_its_finding_and_gains_the_failed_checks():
    layer = Diagnosis(phase="prefill", prompt=0, departs_at="decoder layer 1")
    found, line = of_failed_checks(layer, ["stopping"], same, reference())
    assert found.departs_at == "decoder layer 1" and found.failed_checks == ["stopping"] and line is None


TEXT = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 8, prompts: 2}
sweep:
  adapter: [hf-tab-tokenizer]
"""


def test_harness_verify_names_the_tokenizer_when_only_its_check_fails(write_scenario, tmp_path, capsys, tiny_llama):
    """A tokenizer that turns tabs into spaces: the gate's prompts hold none, so their ids agree and the gate
    passes; the tokenizer check fails on the shipped corpus, and the diagnosis names the tokenizer."""
    from harness import cli
    from harness.adapters.hf import HFAdapter
    from harness.records import store
    from tests.conftest import registered

    class TabTokenizer(HFAdapter):
        name = "hf-tab-tokenizer"

        def load(self, model, point, settings):
            super().load(model, point, settings)
            self._tokenizer = model.tokenizer()

        def tokenize(self, text, add_special=True):
            return list(self._tokenizer.encode(text.replace("\t", " "), add_special_tokens=add_special).ids)

        def detokenize(self, ids):
            return self._tokenizer.decode(list(ids))

    for _ in registered([TabTokenizer]):
        assert cli.main(["verify", str(write_scenario(TEXT)), "--results", str(tmp_path), "--isolation", "none"]) == 1
    out = capsys.readouterr().out
    [(_, record)] = list(store.iter_records(tmp_path / "scenario"))
    gate = record.correctness
    assert gate.text_path.failed() == ["tokenizer"] and gate.diagnosis.failed_checks == ["tokenizer"], gate.reasons
    assert gate.diagnosis.input_ids.agree is True
    assert "the fault lies where the failed check looked: the tokenizer" in out, out
