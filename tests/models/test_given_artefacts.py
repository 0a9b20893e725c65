"""``model.artefacts``: an engine's own artefact the user names (a GGUF for llamacpp, an IR folder for
openvino) is refused by ``harness check`` and ``harness run`` before any point runs when it is missing, of
the wrong kind or of another vocabulary size than the checkpoint: one line naming the file, the field and
what was expected, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.models import artefacts, gguf_header
from harness.scenario.schema import ModelSpec
from tests.tiny_scenario import tiny

VOCABULARY = 48  # the made-up checkpoint's vocab_size


def checkpoint(folder: Path, vocabulary: int = VOCABULARY) -> Path:
    """An HF checkpoint folder the source check accepts: a config and an (empty) safetensors file."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "vocab_size": vocabulary}))
    (folder / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")  # header {}: no tensors
    return folder


def gguf_file(path: Path, tokens: int) -> Path:
    """A GGUF header with a vocabulary of ``tokens`` entries and no tensors."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"t{i}" for i in range(tokens)])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def ir_folder(folder: Path, logits: int) -> Path:
    """An IR folder whose graph's logits port has ``logits`` entries (no weights: only the .xml is read)."""
    folder.mkdir()
    (folder / artefacts.IR_XML).write_text(
        '<?xml version="1.0"?>\n<net name="m" version="11"><layers>'
        '<layer id="1" name="lm_head" type="MatMul" version="opset1"><output>'
        f'<port id="2" precision="FP32" names="logits"><dim>-1</dim><dim>-1</dim><dim>{logits}</dim></port>'
        "</output></layer></layers></net>\n"
    )
    return folder


def scenario(write_scenario, tmp_path: Path, adapters: tuple[str, ...] = (), **given) -> Path:
    """A scenario on the made-up checkpoint naming ``given`` artefacts; its sweep runs ``adapters`` (default:
    hf and the adapters of the given artefacts)."""
    source = checkpoint(tmp_path / "my-model")
    model = {"source": str(source), "artefacts": given}
    return write_scenario(tiny(model=model, sweep={"adapter": list(adapters or ("hf", *given))}))


def refused(argv: list[str], capsys) -> str:
    assert cli_main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_gguf_that_does_not_exist_is_refused_naming_the_field(write_scenario, tmp_path, capsys, command):
    path = scenario(write_scenario, tmp_path, llamacpp=str(tmp_path / "missing.gguf"))
    line = refused([command, str(path), *(["--results", str(tmp_path / "r")] if command == "run" else [])], capsys)
    assert line.startswith(f"ERROR {path}:")
    assert line.endswith(
        f": model.artefacts.llamacpp: {tmp_path / 'missing.gguf'}: no such file; expected the .gguf file llama.cpp "
        "should run"
    )


def test_a_folder_given_as_the_gguf_is_refused(write_scenario, tmp_path, capsys):
    (tmp_path / "folder.gguf").mkdir()
    path = scenario(write_scenario, tmp_path, llamacpp=str(tmp_path / "folder.gguf"))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.llamacpp: {tmp_path / 'folder.gguf'}: a folder; expected a .gguf file"
    )


def test_a_gguf_of_another_vocabulary_is_refused(write_scenario, tmp_path, capsys):
    other = gguf_file(tmp_path / "other.gguf", VOCABULARY + 3)
    path = scenario(write_scenario, tmp_path, llamacpp=str(other))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.llamacpp: {other}: the GGUF's tokenizer.ggml.tokens hold 51 tokens, the checkpoint's "
        "vocabulary 48; expected the artefact of the checkpoint model.source names (the gate compares against "
        "that checkpoint)"
    )


def test_an_ir_folder_without_its_graph_is_refused(write_scenario, tmp_path, capsys):
    (tmp_path / "ir").mkdir()
    path = scenario(write_scenario, tmp_path, openvino=str(tmp_path / "ir"))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.openvino: {tmp_path / 'ir'}: a folder without openvino_model.xml; expected an OpenVINO "
        "IR folder holding openvino_model.xml and its .bin"
    )


def test_a_file_given_as_the_ir_folder_is_refused(write_scenario, tmp_path, capsys):
    xml = ir_folder(tmp_path / "ir", VOCABULARY) / artefacts.IR_XML
    path = scenario(write_scenario, tmp_path, openvino=str(xml))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.openvino: {xml}: a file; expected an OpenVINO IR folder holding openvino_model.xml and "
        "its .bin"
    )


def test_an_ir_of_another_vocabulary_is_refused(write_scenario, tmp_path, capsys):
    ir = ir_folder(tmp_path / "ir", 1000)
    path = scenario(write_scenario, tmp_path, openvino=str(ir))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.openvino: {ir}: the IR's logits hold 1,000 tokens, the checkpoint's vocabulary 48; "
        "expected the artefact of the checkpoint model.source names (the gate compares against that checkpoint)"
    )


def test_an_artefact_for_an_engine_without_one_is_refused_by_the_schema(write_scenario, tmp_path, capsys):
    path = scenario(write_scenario, tmp_path, ("hf",), hf=str(tmp_path))
    line = refused(["check", str(path)], capsys)
    assert line.startswith(f"ERROR {path}:") and ": model.artefacts.hf: " in line


@pytest.mark.parametrize("command", ["check", "run"])
def test_an_artefact_for_an_adapter_the_sweep_never_runs_is_refused_naming_the_adapters_it_runs(
    write_scenario, tmp_path, capsys, command
):
    ir = ir_folder(tmp_path / "ir", VOCABULARY)
    path = scenario(write_scenario, tmp_path, ("hf",), openvino=str(ir))
    line = refused([command, str(path), *(["--results", str(tmp_path / "r")] if command == "run" else [])], capsys)
    assert line == (
        f"ERROR {path}:3: model.artefacts.openvino: {ir}: no point of this sweep runs openvino; expected an "
        "artefact for an adapter the sweep runs (hf), or openvino in sweep.adapter"
    )
    assert not (tmp_path / "r").exists()  # refused before any point


def test_an_artefact_whose_adapter_every_point_excludes_is_refused(write_scenario, tmp_path, capsys):
    ir = ir_folder(tmp_path / "ir", VOCABULARY)
    model = {"source": str(checkpoint(tmp_path / "my-model")), "artefacts": {"openvino": str(ir)}}
    text = tiny(model=model, sweep={"adapter": ["hf", "openvino"]}, exclude=[{"adapter": "openvino"}])
    assert refused(["check", str(write_scenario(text))], capsys).endswith(
        f": model.artefacts.openvino: {ir}: no point of this sweep runs openvino; expected an artefact for an "
        "adapter the sweep runs (hf), or openvino in sweep.adapter"
    )


def test_a_misspelt_adapter_under_artefacts_is_refused_with_the_closest_name(write_scenario, tmp_path, capsys):
    ir = ir_folder(tmp_path / "ir", VOCABULARY)
    path = scenario(write_scenario, tmp_path, ("hf",), openvno=str(ir))
    assert refused(["check", str(path)], capsys).endswith(
        ": model.artefacts.openvno: unknown field; did you mean 'openvino'? valid fields: llamacpp, openvino"
    )


def test_an_ir_whose_graph_is_not_xml_is_refused_naming_the_file(write_scenario, tmp_path, capsys):
    ir = tmp_path / "ir"
    ir.mkdir()
    (ir / artefacts.IR_XML).write_text("")  # an export cut short
    path = scenario(write_scenario, tmp_path, openvino=str(ir))
    assert refused(["check", str(path)], capsys).endswith(
        f": model.artefacts.openvino: {ir / artefacts.IR_XML}: not readable as an IR graph (no element found: line "
        "1, column 0); expected the .xml an OpenVINO export writes"
    )


def test_artefacts_of_the_checkpoints_vocabulary_pass_the_check(write_scenario, tmp_path, capsys):
    given = {
        "llamacpp": str(gguf_file(tmp_path / "m.gguf", VOCABULARY)),
        "openvino": str(ir_folder(tmp_path / "ir", 48)),
    }
    path = scenario(write_scenario, tmp_path, ("hf", "llamacpp", "openvino"), **given)
    assert cli_main(["check", str(path)]) == 0
    # a point's line may carry what check predicts about the fake checkpoint beyond the artefacts (will fail: ...)
    assert [line.split("::")[1].split("-")[0] for line in capsys.readouterr().out.splitlines()] == [
        "hf",
        "llamacpp",
        "openvino",
    ]


def test_the_gguf_header_walk_counts_the_vocabulary(tmp_path):
    assert gguf_header.read(gguf_file(tmp_path / "m.gguf", 300)).vocabulary == 300


def test_a_given_artefact_is_identified_by_its_content(tmp_path):
    first = gguf_file(tmp_path / "a.gguf", 10)
    spec = ModelSpec(source="tiny-llama", artefacts={"llamacpp": str(first)})
    given = artefacts.given(spec, "llamacpp")
    from harness.io import file_sha256

    assert given.record() == {"artefact": "given by the user", "path": str(first), "sha256": file_sha256(first)}
    assert artefacts.given(spec, "openvino") is None
