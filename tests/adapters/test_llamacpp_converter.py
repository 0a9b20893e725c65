"""llama.cpp's own converter (``harness.adapters.llamacpp.converter``): found where the set-up puts it, its
refusals and failures in one line naming the checkpoint, the step and the converter's own words."""

from __future__ import annotations

import json
from importlib.util import find_spec

import pytest

from harness.adapters.base import PointSkipped
from harness.adapters.llamacpp import converter

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")


def test_a_missing_converter_skips_naming_the_set_up_step(monkeypatch, tmp_path):
    monkeypatch.setenv(converter.ENV, str(tmp_path))
    with pytest.raises(PointSkipped) as caught:
        converter.convert(tmp_path / "ckpt", tmp_path / "out" / "model.gguf")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'ckpt'}: GGUF conversion (llama.cpp convert_hf_to_gguf.py")
    assert f"is not in {tmp_path / converter.version()}: run scripts/setup.sh" in message


def test_the_converter_identity_names_the_engine_version():
    assert converter.identity("0.3.36") == "llama.cpp convert_hf_to_gguf.py (llama-cpp-python 0.3.36)"
    assert converter.key("0.3.36") == "hf2gguf-0.3.36"
    assert converter.version() in converter.identity()


@pytest.mark.parametrize(
    "pre_tokenizer, expected",
    [
        ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}, "gpt-2"),
        ({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "use_regex": True}]}, "gpt-2"),
        # Llama 3 / Qwen 2 style: their own split regex, then byte-level without GPT-2's: no guess
        ({"type": "Sequence", "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel", "use_regex": False}]}, None),
        ({"type": "Metaspace"}, None),
        (None, None),
    ],
)
def test_only_a_plain_gpt2_byte_level_split_gets_a_fallback_pre_tokenizer(tmp_path, pre_tokenizer, expected):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"pre_tokenizer": pre_tokenizer}))
    assert converter.fallback_pre_tokenizer(tmp_path) == expected


def test_the_converters_own_words_are_its_last_message():
    log = "INFO:hf-to-gguf:Loading model: x\nINFO:hf-to-gguf:Model architecture: NoSuch\nERROR:hf-to-gguf:Model NoSuch is not supported\n"
    assert converter.last_words(log) == "Model NoSuch is not supported"
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    main()\nValueError: Error: Missing tokenizer.model\n'
    assert converter.last_words(trace) == "ValueError: Error: Missing tokenizer.model"


def test_an_architecture_the_converter_does_not_know_is_refused_in_one_line(tmp_path):
    if converter.missing_reason():
        pytest.fail(converter.missing_reason())  # the set-up provides it: a missing converter is a broken set-up
    checkpoint = tmp_path / "my-model"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"architectures": ["NoSuchForCausalLM"], "model_type": "x"}))
    with pytest.raises(converter.ConversionRefused) as caught:
        converter.convert(checkpoint, tmp_path / "out.gguf")
    assert str(caught.value) == (
        f"{checkpoint}: GGUF conversion ({converter.identity()}) refused the checkpoint: "
        "Model NoSuchForCausalLM is not supported"
    )
    assert isinstance(caught.value, PointSkipped)  # llama.cpp cannot run it: the point skips with that reason
