"""``harness check`` resolves each point's model source and llama.cpp's converter before any point runs,
without loading weights: a llama.cpp point whose checkpoint the converter refuses, or whose converter the
set-up has not extracted, is listed as a point that will skip, with the converter's own reason."""

from __future__ import annotations

import json
from importlib.util import find_spec

import pytest

from harness.adapters.llamacpp import converter
from harness.cli import main as cli_main
from tests.tiny_scenario import tiny

needs_llamacpp = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")


def checked(path, capsys) -> list[str]:
    assert cli_main(["check", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


@needs_llamacpp
def test_a_missing_converter_is_a_point_that_will_skip_naming_the_set_up_step(
    write_scenario, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(converter.ENV, str(tmp_path / "nowhere"))
    path = write_scenario(tiny(sweep={"adapter": ["llamacpp"]}))
    missing = converter.missing_reason()
    assert checked(path, capsys) == [
        f"scenario::llamacpp-cpu-f16  will skip: tiny-llama: GGUF conversion ({converter.identity()}): {missing}"
    ]
    assert missing.startswith("llama.cpp's converter (convert_hf_to_gguf.py from the llama-cpp-python")


def test_a_scenario_that_gives_llamacpp_its_gguf_needs_no_converter(write_scenario, tmp_path, capsys, monkeypatch):
    from tests.models.test_given_artefacts import gguf_file

    monkeypatch.setenv(converter.ENV, str(tmp_path / "nowhere"))
    given = gguf_file(tmp_path / "m.gguf", 512)
    model = {"source": "tiny-llama", "artefacts": {"llamacpp": str(given)}}
    (line,) = checked(write_scenario(tiny(model=model, sweep={"adapter": ["llamacpp"]})), capsys)
    assert line.startswith("scenario::llamacpp-cpu-") and "will skip" not in line


@needs_llamacpp
def test_an_architecture_the_converter_refuses_is_a_point_that_will_skip(write_scenario, tmp_path, capsys, monkeypatch):
    if converter.missing_reason():
        pytest.fail(converter.missing_reason())  # the set-up provides it
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))  # the converter's lookup runs, not a kept one
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["NoSuchForCausalLM"], "model_type": "nosuch"}))
    (model / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    path = write_scenario(tiny(model=str(model), sweep={"adapter": ["hf", "llamacpp"]}))
    hf, llamacpp = checked(path, capsys)
    # transformers does not know it either: the hf point is predicted to fail (its own test: tests/adapters/
    # test_checkpoints_an_engine_cannot_take.py)
    assert hf.startswith(f"scenario::hf-cpu-bf16  will fail: {model / 'config.json'}: checkpoint load (transformers): ")
    assert llamacpp == (
        f"scenario::llamacpp-cpu-f16  will skip: {model}: GGUF conversion ({converter.identity()}) refused the "
        "checkpoint: Model NoSuchForCausalLM is not supported"
    )
    assert checked(path, capsys)[1].endswith("Model NoSuchForCausalLM is not supported")  # kept: asked once


@needs_llamacpp
def test_the_shipped_tiny_architectures_are_taken_by_the_converter(write_scenario, capsys):
    path = write_scenario(tiny(model="tiny-qwen2", sweep={"adapter": ["llamacpp"]}))
    assert checked(path, capsys) == ["scenario::llamacpp-cpu-f16"]


@needs_llamacpp
def test_check_and_run_keep_the_converters_lookup_and_gguf_in_the_cache_dir(write_scenario, tmp_path, monkeypatch):
    if converter.missing_reason():
        pytest.fail(converter.missing_reason())  # the set-up provides it
    monkeypatch.setenv(converter.ENV, str(converter.source_dir().parent))  # the converter itself stays where it is
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "default"))  # where a run without --cache-dir writes
    cache = tmp_path / "mine"
    path = write_scenario(tiny(model="tiny-qwen2", sweep={"adapter": ["llamacpp"]}))
    assert cli_main(["check", str(path), "--cache-dir", str(cache)]) == 0
    assert len(list((cache / "llamacpp" / "architectures").glob("*.json"))) == 1  # the lookup, kept there
    assert cli_main(["run", str(path), "--cache-dir", str(cache), "--results", str(tmp_path / "results")]) == 0
    assert len(list((cache / "llamacpp").glob(f"tiny-qwen2-*-{converter.key()}/model.gguf"))) == 1
    assert not (tmp_path / "default").exists() and not (tmp_path / "home" / ".cache" / "harness").exists()
