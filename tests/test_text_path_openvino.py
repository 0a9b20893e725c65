"""The engine's own text path on OpenVINO GenAI through ``harness verify``, on a tiny Llama with a chat
template: GenAI's tokenizer (the openvino_tokenizers IRs its pipeline loads) on the tricky-string corpus,
its chat template (``Tokenizer.apply_chat_template``) and free-running text through its text-in, text-out
``LLMPipeline.generate``. A tokenizer IR with two tokens' ids swapped passes the gate (which feeds the
reference's ids) and fails the text path; an IR directory without tokenizer IRs gets them converted."""

from __future__ import annotations

import re
import shutil

import pytest

from harness.cli.app import main
from harness.models.gguf_convert import GEMMA_CHAT_TEMPLATE
from harness.records.store import iter_records

from .conftest import registered

pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")

from .faults_ov import NoTokenizerIR, SwappedToken  # noqa: E402


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


@pytest.fixture(scope="module")
def chat_model(tiny_llama, tmp_path_factory):
    """tiny-llama with a chat template (Gemma's turn format), as an HF directory source."""
    path = tmp_path_factory.mktemp("model") / "tiny-llama-chat"
    shutil.copytree(tiny_llama.hf_dir, path, ignore=shutil.ignore_patterns("harness-*"))
    (path / "chat_template.jinja").write_text(GEMMA_CHAT_TEMPLATE, encoding="utf-8")
    return path


@pytest.fixture
def faults():
    yield from registered((Swapped, Unconverted))


def lines(out: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r"^\w+ +scenario::(\S+):.*$", out, re.M)}


def test_genai_text_path_passes_clean_and_fails_a_swapped_token(write_scenario, tmp_path, capsys, faults, chat_model):
    adapters = ", ".join(["openvino", Swapped.name, Unconverted.name])
    path = write_scenario(SCENARIO.replace("MODEL", str(chat_model)).replace("ADAPTERS", adapters))
    results = tmp_path / "results"
    code = main(["verify", str(path), "--results", str(results), "--isolation", "none"])
    out = capsys.readouterr().out
    found = lines(out)
    assert code == 1, out
    clean = found["openvino-CPU"]
    assert clean.startswith("PASS ") and "text path: tok pass, chat pass, text pass, batch -" in clean, out
    swapped = found[f"{Swapped.name}-CPU"]
    # The gate feeds the reference's ids and passes this point; its own tokenizer reads other ids.
    assert swapped.startswith("FAIL ") and "tok fail" in swapped and "text fail" in swapped, out
    assert "chat pass" in swapped  # the chat template renders text: the vocabulary does not touch it
    assert "right: reference" in out and "diagnosis: input ids depart from the reference's" in out
    converted = found[f"{Unconverted.name}-CPU"]
    assert converted.startswith("PASS ") and "tok pass, chat pass, text pass" in converted, out

    records = {r.point["adapter"]: r.correctness.text_path for _, r in iter_records(results)}
    ran = records["openvino"]
    assert ran.tokenizer.strings > 20 and "IR directory's own openvino_tokenizer.xml" in ran.tokenizer.vocabulary["source"]
    assert ran.chat_template.engine_template.startswith("GenAI Tokenizer.chat_template")
    assert ran.chat_template.conversations == 2
    assert ran.free_text.text_api == "generate_text" and ran.free_text.prompts == 8
    assert "converted by the harness" in records[Unconverted.name].tokenizer.vocabulary["source"]
    assert records[Swapped.name].tokenizer.disagreements[0].right == "reference"
