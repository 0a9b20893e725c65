from __future__ import annotations

import hashlib

import pytest

from harness.errors import ModelError
from harness.models import source_check, sources
from harness.models.cache_build import build_once
from harness.scenario.schema import ModelSpec


def test_build_once_builds_atomically_and_only_once(tmp_path):
    target = tmp_path / "artefact"
    calls = []

    def crash(out):
        (out / "half").write_text("x")
        raise RuntimeError("converter died")

    with pytest.raises(RuntimeError):
        build_once(target, crash, "done")
    # nothing half-built is left (the lock file beside it stays, as the references' do)
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["artefact.lock"]

    def build(out):
        calls.append(out)
        (out / "done").write_text("ok")

    assert build_once(target, build, "done") is True
    assert build_once(target, build, "done") is False
    assert len(calls) == 1 and (target / "done").read_text() == "ok"


def test_a_killed_build_s_leftovers_are_removed_with_a_note_never_used(tmp_path, capsys):
    target = tmp_path / "artefact"
    target.mkdir()
    (target / "config.json").write_text("{")  # cut short, no marker: a copy or a build from before the lock
    killed = tmp_path / ".artefact.building-abcd1234"  # a build killed with SIGKILL: no handler ran
    killed.mkdir()
    older = tmp_path / ".artefact-wxyz5678"  # the same, left by an older harness
    older.mkdir()
    other = tmp_path / ".artefact-x.building-abcd1234"  # another target's build, running now: not touched
    other.mkdir()

    def build(out):
        (out / "config.json").write_text("{}")
        (out / "done").write_text("ok")

    assert build_once(target, build, "done") is True
    assert (target / "config.json").read_text() == "{}" and (target / "done").exists()
    assert not killed.exists() and not older.exists() and other.exists()
    err = capsys.readouterr().err
    assert err.count("note: removing") == 3 and str(target) in err and str(killed) in err


def _weights_digest(resolved) -> str:
    return hashlib.sha256((resolved.hf_dir / "model.safetensors").read_bytes()).hexdigest()


def test_tiny_models_are_deterministic_per_seed(tmp_path, tiny_llama):
    rebuilt = sources.resolve(ModelSpec(source="tiny-llama"), tmp_path)  # a fresh cache: built again
    assert rebuilt.convert_s > 0
    assert _weights_digest(rebuilt) == _weights_digest(tiny_llama)
    assert rebuilt.tokenizer().to_str() == tiny_llama.tokenizer().to_str()
    other_seed = sources.resolve(ModelSpec(source="tiny-llama", seed=1), tmp_path)
    assert _weights_digest(other_seed) != _weights_digest(tiny_llama)
    assert other_seed.checksum != tiny_llama.checksum


@pytest.mark.parametrize(
    "source, message",
    [
        ("tiny-bert", "unknown tiny model 'tiny-bert'; known: tiny-llama, tiny-qwen2, tiny-gemma3-text"),
        ("/nonexistent/model", "neither a built-in model"),
    ],
)
def test_unknown_sources_are_refused_with_what_is_known(source, message):
    assert message in source_check.problem(ModelSpec(source=source))
    with pytest.raises(ModelError, match=message.split(";")[0]):
        sources.resolve(ModelSpec(source=source))


def test_local_hf_directory_is_used_in_place(tiny_llama):
    local = sources.resolve(ModelSpec(source=str(tiny_llama.hf_dir)))
    assert local.hf_dir == tiny_llama.hf_dir and len(local.checksum) == 64 and local.convert_s == 0


TEMPLATE_SCENARIO = """
model: MODEL
generation: {max_new_tokens: 2}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 4, prompts: ci, length: short}
sweep:
  adapter: [hf]
"""


def test_a_chat_template_edited_in_place_changes_the_checksum_the_caches_are_keyed_by(
    write_scenario, tmp_path, capsys, chat_model
):
    """transformers 5 keeps the chat template in chat_template.jinja; the checksum of an HF directory (which
    keys the OpenVINO IR, the llama.cpp GGUF export and the converted-tokenizer caches) covered only .json,
    weight and .model files, so a template edited in place reused artefacts built with the old one. Through
    ``harness verify``: the record's model checksum changes with the template and with nothing else."""
    import shutil

    from harness.cli import main
    from harness.records.store import iter_records

    model = tmp_path / "tiny-llama-chat"
    shutil.copytree(chat_model, model)
    path = write_scenario(TEMPLATE_SCENARIO.replace("MODEL", str(model)))

    def verify(name: str) -> str:
        results = tmp_path / name
        argv = ["verify", str(path), "--results", str(results), "--isolation", "none"]
        assert main([*argv, "--reference-dir", str(tmp_path / name / "references")]) == 0, capsys.readouterr()
        ((_, record),) = iter_records(results / "scenario")
        return record.model.checksum

    before, again = verify("before"), verify("again")
    assert before == again  # nothing edited: the same key, the caches reused
    template = model / "chat_template.jinja"
    template.write_text(template.read_text(encoding="utf-8").replace("<start_of_turn>", "<start_of_turn> "))
    after = verify("after")
    assert after != before
    assert sources.resolve(ModelSpec(source=str(model))).checksum == after


def test_resolve_built_answers_only_from_the_cache(tmp_path, tiny_llama, cache_dir):
    """A worker's early look at its model (``worker_prefetch``) builds nothing: a build's time and notes
    belong to the point that needs it."""
    assert sources.resolve_built(ModelSpec(source="tiny-llama"), tmp_path) is None
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())
    built = sources.resolve_built(ModelSpec(source="tiny-llama"), cache_dir)
    assert (built.hf_dir, built.checksum, built.convert_s) == (tiny_llama.hf_dir, tiny_llama.checksum, 0.0)
