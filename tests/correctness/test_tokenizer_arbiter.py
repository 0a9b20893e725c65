"""Who is right when an engine's tokenizer disagrees with the reference and the engine names no vocabulary
file (no GGUF, no conversion): the checkpoint's own tokenizer.json, read afresh by ``tokenizers``, decides
(``harness.correctness.vocabulary.checkpoint_arbiter``), through ``harness verify`` on a tiny transformers
engine whose tokenizer drops a space; before, such a disagreement was ``undecided``."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from harness.adapters.hf import HFAdapter
from harness.cli.app import main
from harness.correctness import vocabulary
from harness.records.store import iter_records
from tests.conftest import registered


class OwnTokenizer(HFAdapter):
    """transformers with a text path of its own: the checkpoint's tokenizer.json through ``tokenizers``."""

    name = "hf-own-tokenizer"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self._tokenizer = model.tokenizer()

    def _text(self, text: str) -> str:
        return text

    def tokenize(self, text, add_special=True):
        return list(self._tokenizer.encode(self._text(text), add_special_tokens=add_special).ids)

    def detokenize(self, ids):
        return self._tokenizer.decode(list(ids), skip_special_tokens=True)


class DroppedSpace(OwnTokenizer):
    """A tokenizer port that drops the first space of its text (a pre-tokenizer split gone wrong)."""

    name = "hf-dropped-space"

    def _text(self, text: str) -> str:
        return text.replace(" ", "", 1)


def test_the_checkpoints_tokenizer_json_says_the_reference_is_right(tiny_llama):
    decide, found = vocabulary.checkpoint_arbiter(SimpleNamespace(gguf_path=None, hf_dir=tiny_llama.hf_dir))
    assert found["source"].endswith("tokenizer.json")
    tokenizer = tiny_llama.tokenizer()
    text = "The river and the sea"
    ours, engine = tokenizer.encode(text).ids, tokenizer.encode(text.replace(" ", "", 1)).ids
    assert decide(text, engine, ours) == (
        "reference",
        "the checkpoint's tokenizer.json (tokenizers) gives the reference's ids",
    )
    assert decide(text, ours, engine)[0] == "engine"  # whichever side agrees with the checkpoint's files
    assert decide(text, engine, engine[1:])[0] == "neither"


SCENARIO = """
model: tiny-llama
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {k: 5, tokens: 8, prompts: 2}
sweep:
  adapter: [hf-own-tokenizer, hf-dropped-space]
"""


@pytest.fixture
def engines():
    yield from registered((OwnTokenizer, DroppedSpace))


def test_harness_verify_arbitrates_a_dropped_space_by_the_checkpoints_tokenizer(
    engines, write_scenario, tmp_path, reference_dir, capsys
):
    argv = ["verify", str(write_scenario(SCENARIO)), "--results", str(tmp_path / "results"), "--isolation", "none"]
    code = main([*argv, "--reference-dir", str(reference_dir)])
    out = capsys.readouterr().out
    assert code == 1, out
    clean = re.search(r"^\w+ +scenario::hf-own-tokenizer-\S+:.*$", out, re.M).group(0)
    faulty = re.search(r"^\w+ +scenario::hf-dropped-space-\S+:.*$", out, re.M).group(0)
    assert "tok pass" in clean and "tok fail" in faulty and faulty.startswith("FAIL "), out
    assert "right: reference" in out and "undecided" not in out, out
    records = {r.point["adapter"]: r.correctness.text_path.tokenizer for _, r in iter_records(tmp_path / "results")}
    found = records["hf-dropped-space"]
    assert found.disagreements and {d.right for d in found.disagreements} == {"reference"}, found
    assert all("tokenizer.json" in d.why for d in found.disagreements)
    assert found.vocabulary["source"].endswith("tokenizer.json"), found.vocabulary
