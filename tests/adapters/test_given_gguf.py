"""A GGUF the user already has (``model.artefacts.llamacpp``) runs as it is through ``harness run``: nothing is
converted, the record names the file and its sha256, and the gate compares it with the HF reference of the
checkpoint ``model.source`` names. A GGUF llama.cpp cannot load fails its point naming the step and the file."""

from __future__ import annotations

import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.io import file_sha256
from harness.models import artefacts
from harness.records.store import iter_records
from tests.models.test_given_artefacts import gguf_file

pytestmark = pytest.mark.skipif(
    not all(find_spec(m) for m in ("llama_cpp", "transformers")), reason="the llamacpp or hf extra is missing"
)

SCENARIO = """
model:
  source: tiny-llama
  artefacts: {{llamacpp: {gguf}}}
prompts: ["The river"]
generation: {{max_new_tokens: 4}}
measurement: {{warmup_rounds: 0, min_rounds: 1, threads: 2}}
gate: {{k: 5, tokens: 8, prompts: ci}}
sweep:
  adapter: [llamacpp]
"""


@pytest.fixture(scope="session")
def user_gguf(tiny_llama, tmp_path_factory, cache_dir) -> Path:
    """tiny-llama made into a GGUF by the project's own converter, copied outside the harness's cache: the
    user's file, with the converter's conversion.json beside it, which must not be read."""
    from harness.adapters.llamacpp import converter, gguf_files

    if converter.missing_reason():
        pytest.fail(converter.missing_reason())  # the set-up provides it
    made = gguf_files.converted(tiny_llama, cache_dir)
    out = tmp_path_factory.mktemp("user") / "tiny-llama-f16.gguf"
    shutil.copyfile(made, out)
    shutil.copyfile(made.parent / converter.RECORD, out.parent / converter.RECORD)
    return out


def run(write_scenario, tmp_path: Path, gguf: Path) -> tuple[int, list]:
    path = write_scenario(SCENARIO.format(gguf=gguf))
    options = ["--results", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    options += ["--reference-dir", str(tmp_path / "references"), "--isolation", "none", "--no-energy"]
    code = cli_main(["run", str(path), *options])
    if not (tmp_path / "results").exists():  # refused before any point
        return code, []
    return code, [record for _, record in iter_records(tmp_path / "results")]


def test_a_users_gguf_runs_as_is_and_the_record_names_it(write_scenario, tmp_path, user_gguf, capsys):
    code, records = run(write_scenario, tmp_path, user_gguf)
    (record,) = records
    assert code == 0, (record.status, record.reason)
    assert record.status == "ok" and record.correctness.verdict == "pass", record.correctness.reasons
    extra = record.engine.extra
    assert extra["artefact"] == {
        "artefact": "given by the user",
        "path": str(user_gguf),
        "sha256": file_sha256(user_gguf),
    }
    assert extra["gguf"] == str(user_gguf) and extra["converter"] is None  # no conversion made it here
    converted = (
        [p.name for p in (tmp_path / "cache" / "llamacpp").glob("*")]
        if (tmp_path / "cache" / "llamacpp").exists()
        else []
    )
    assert converted == []  # the harness converted nothing


def test_a_gguf_llamacpp_cannot_load_fails_naming_the_step_and_the_file(write_scenario, tmp_path, tiny_llama):
    # the checkpoint's vocabulary, so the check lets it through; no tensors, so llama.cpp refuses to load it
    broken = gguf_file(tmp_path / "broken.gguf", artefacts.checkpoint_vocabulary(tiny_llama.hf_dir))
    code, records = run(write_scenario, tmp_path, broken)
    (record,) = records
    assert code == 1 and record.status == "failed"
    expected = (
        f"StepFailed: {broken}: llama.cpp model load failed: ValueError: Failed to load model from file: {broken}"
    )
    assert record.reason == expected


def test_a_gguf_of_another_vocabulary_is_refused_by_run_before_any_point(write_scenario, tmp_path, tiny_llama, capsys):
    vocabulary = artefacts.checkpoint_vocabulary(tiny_llama.hf_dir)
    other = gguf_file(tmp_path / "other.gguf", vocabulary + 1)  # harness check cannot tell: tiny-llama is built later
    code, records = run(write_scenario, tmp_path, other)
    assert code == 2 and records == []
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ERROR")]
    assert line.endswith(
        f"model.artefacts.llamacpp: {other}: the GGUF's tokenizer.ggml.tokens hold {vocabulary + 1:,} tokens, the "
        f"checkpoint's vocabulary {vocabulary:,}; expected the artefact of the checkpoint model.source names (the gate "
        "compares against that checkpoint)"
    )
