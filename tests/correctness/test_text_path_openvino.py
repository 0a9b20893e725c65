"""The engine's own text path on OpenVINO GenAI through ``harness verify``, on a tiny Llama with a chat
template: GenAI's tokenizer (the openvino_tokenizers IRs its pipeline loads) on the tricky-string corpus,
its chat template (``Tokenizer.apply_chat_template``) and free-running text through its text-in, text-out
``LLMPipeline.generate``. A tokenizer IR with two tokens' ids swapped passes the gate (which feeds the
reference's ids) and fails the text path; an IR directory without tokenizer IRs gets them converted."""

from __future__ import annotations

import re

import pytest

from harness.cli.app import main
from harness.records.store import iter_records
from tests.conftest import registered

pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")

from tests.faults_ov import NoTokenizerIR, SwappedToken  # noqa: E402


class Swapped(SwappedToken):
    name = "openvino-swapped-token"


class Unconverted(NoTokenizerIR):
    name = "openvino-no-tokenizer-ir"


SCENARIO = """
model: MODEL
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {k: 5, tokens: 8, prompts: 8}
sweep:
  adapter: [ADAPTERS]
  device: [CPU]
"""


@pytest.fixture
def faults():
    yield from registered((Swapped, Unconverted))


def harness(command, write_scenario, tmp_path, model, adapters, reference_dir) -> int:
    text = SCENARIO.replace("MODEL", str(model)).replace("ADAPTERS", ", ".join(adapters))
    argv = [command, str(write_scenario(text)), "--results", str(tmp_path / "results"), "--isolation", "none"]
    return main([*argv, "--reference-dir", str(reference_dir)])


def lines(out: str) -> dict[str, str]:
    """Each point's verify line (PASS/FAIL/...), not the run's closing verdict lines (FAILED ...) after them."""
    found: dict[str, str] = {}
    for m in re.finditer(r"^\w+ +scenario::(\S+):.*$", out, re.M):
        found.setdefault(m.group(1), m.group(0))
    return found


def test_genai_text_path_passes_clean_and_fails_a_swapped_token(
    write_scenario, tmp_path, capsys, faults, chat_model, reference_dir
):
    code = harness("verify", write_scenario, tmp_path, chat_model, ["openvino", Swapped.name], reference_dir)
    out = capsys.readouterr().out
    found = lines(out)
    assert code == 1, out
    from tests.machine import openvino_cpu_precision

    # at quantization none the CPU plugin's precision names the point: derived from this machine
    precision = openvino_cpu_precision()
    clean = found[f"openvino-CPU-{precision}"]
    assert clean.startswith("PASS ") and "text path: tok pass, chat pass, text pass, batch -" in clean, out
    swapped = found[f"{Swapped.name}-CPU-{precision}"]
    # The gate feeds the reference's ids and passes this point; its own tokenizer reads other ids.
    assert swapped.startswith("FAIL ") and "tok fail" in swapped and "text fail" in swapped, out
    assert "chat pass" in swapped  # the chat template renders text: the vocabulary does not touch it
    assert "the engine's tokenizer disagrees with the reference on" in out and "right: reference" in out
    assert "diagnosis: input ids depart from the reference's" in out


def test_the_record_says_which_tokenizer_ran_and_an_ir_without_one_gets_it_converted(
    write_scenario, tmp_path, faults, chat_model, reference_dir
):
    adapters = ["openvino", Unconverted.name]
    assert harness("run", write_scenario, tmp_path, chat_model, adapters, reference_dir) == 0
    records = {r.point["adapter"]: r.correctness for _, r in iter_records(tmp_path / "results")}
    ran = records["openvino"].text_path
    assert ran.tokenizer.verdict == "pass" and ran.tokenizer.strings == 28  # 20 tricky strings + 8 prompts
    assert "IR directory's own openvino_tokenizer.xml" in ran.tokenizer.vocabulary["source"]
    assert ran.chat_template.verdict == "pass" and ran.chat_template.conversations == 2
    assert ran.chat_template.engine_template.startswith("GenAI Tokenizer.chat_template")
    assert ran.free_text.verdict == "pass" and ran.free_text.text_api == "generate_text"
    assert ran.free_text.prompts == 8 and ran.free_text.identical_text >= 1
    converted = records[Unconverted.name]
    assert converted.verdict == "pass" and not converted.text_path.failed()
    source = converted.text_path.tokenizer.vocabulary["source"]
    assert source.startswith("converted by the harness") and "holds no openvino_tokenizer.xml" in source
