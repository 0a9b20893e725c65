"""A checkpoint an engine cannot take fails its point through ``harness run`` in one line naming the step, the
file and the engine's own words, never a traceback on the terminal: a tokenizer OpenVINO's tokenizer converter
(openvino_tokenizers) cannot convert, and a checkpoint transformers cannot run (a ``model_type`` it does not
know)."""

from __future__ import annotations

import json
import shutil
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from tests.tiny_scenario import tiny


def copy_of(tiny_llama, folder: Path) -> Path:
    shutil.copytree(tiny_llama.hf_dir, folder, ignore=shutil.ignore_patterns("harness-*"))
    return folder


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def run_lines(path: Path, tmp_path: Path, capsys) -> tuple[list[str], str]:
    """(the run's stdout lines, its stderr) of a run that fails its points."""
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    assert cli_main(argv) == 1
    out = capsys.readouterr()
    return out.out.splitlines(), out.err


@pytest.mark.skipif(
    not all(find_spec(m) for m in ("openvino_genai", "openvino_tokenizers", "optimum")), reason="no openvino extra"
)
def test_a_tokenizer_openvino_cannot_convert_fails_the_point_naming_the_step_and_the_file(
    write_scenario, tiny_llama, tmp_path, capsys
):
    model = copy_of(tiny_llama, tmp_path / "odd-tokenizer")

    def split_on_underscores_first(tokenizer: dict) -> None:  # a split transformers runs, OpenVINO's converter lacks
        split = {"type": "CharDelimiterSplit", "delimiter": "_"}
        tokenizer["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, tokenizer["pre_tokenizer"]]}

    edit_json(model / "tokenizer.json", split_on_underscores_first)
    path = write_scenario(tiny(model=str(model), sweep={"adapter": ["openvino"], "device": ["CPU"]}))
    lines, err = run_lines(path, tmp_path, capsys)
    assert (
        f"    StepFailed: {model / 'tokenizer.json'}: tokenizer conversion (openvino_tokenizers) failed: OVTypeError: "
        "Pre-tokenizer type 'CharDelimiterSplit' is not supported: 'CharDelimiterSplit'"
    ) in lines, lines
    assert "Traceback" not in err + "\n".join(lines)


@pytest.mark.skipif(
    not all(find_spec(m) for m in ("openvino_genai", "openvino_tokenizers", "optimum")), reason="no openvino extra"
)
def test_a_failed_tokenizer_conversion_keeps_the_ir_and_fails_the_next_point_without_converting_again(
    write_scenario, tiny_llama, tmp_path, capsys, monkeypatch
):
    """The IR exported before the tokenizer failed is kept under its key; the model's next point neither exports
    nor converts again (it fails from the remembered failure); the export's time is the split's conversion."""
    import openvino_tokenizers
    from optimum.intel import OVModelForCausalLM

    from harness.records.store import iter_records

    model = copy_of(tiny_llama, tmp_path / "odd-tokenizer")
    edit_json(
        model / "tokenizer.json", lambda t: t.update(pre_tokenizer={"type": "CharDelimiterSplit", "delimiter": "_"})
    )
    exports, conversions = [], []
    export, convert = OVModelForCausalLM.from_pretrained.__func__, openvino_tokenizers.convert_tokenizer

    def timed_export(cls, *args, **kwargs):
        start = time.perf_counter()
        try:
            return export(cls, *args, **kwargs)
        finally:
            exports.append(time.perf_counter() - start)

    monkeypatch.setattr(OVModelForCausalLM, "from_pretrained", classmethod(timed_export))
    monkeypatch.setattr(
        openvino_tokenizers, "convert_tokenizer", lambda *a, **k: conversions.append(1) or convert(*a, **k)
    )
    sweep = {"adapter": ["openvino"], "device": ["CPU"], "prompt_len": [8, 16]}
    path = write_scenario(tiny(model=str(model), sweep=sweep))
    results = tmp_path / "results"
    argv = ["run", str(path), "--results", str(results), "--cache-dir", str(tmp_path / "cache"), "--isolation", "none"]
    assert cli_main(argv) == 1
    capsys.readouterr()
    records = [record for _, record in iter_records(results)]
    assert [r.status for r in records] == ["failed", "failed"]
    assert records[0].reason == records[1].reason and "tokenizer conversion (openvino_tokenizers)" in records[0].reason
    assert (len(exports), len(conversions)) == (1, 1)  # the second point: no export, no conversion
    (ir,) = (tmp_path / "cache" / "openvino").glob("odd-tokenizer-*/none")
    assert (ir / "openvino_model.xml").is_file() and not (ir / "openvino_tokenizer.xml").exists()  # kept
    first = min(records, key=lambda r: r.started_at).time_split
    assert first.conversion_s >= exports[0]  # the export, not in the model load


@pytest.mark.skipif(find_spec("transformers") is None, reason="no hf extra")
def test_a_model_type_transformers_does_not_know_fails_the_point_naming_the_step_and_the_checkpoint(
    write_scenario, tiny_llama, tmp_path, capsys
):
    model = copy_of(tiny_llama, tmp_path / "unknown-type")
    edit_json(model / "config.json", lambda c: c.update(model_type="nosuchmodel", architectures=["NoSuchForCausalLM"]))
    path = write_scenario(tiny(model=str(model), gate={"tokens": 4, "prompts": 1}, sweep={"adapter": ["hf"]}))
    lines, err = run_lines(path, tmp_path, capsys)
    (failed,) = [line for line in lines if line.startswith("    StepFailed: ")]  # under the point's row
    assert failed.startswith(
        f"    StepFailed: {model}: HF reference (transformers): checkpoint load (transformers) failed: ValueError: "
        "The checkpoint you are trying to load has model type `nosuchmodel` but Transformers does not recognize "
        "this architecture. "
    ), lines
    assert "out of date. You can update Transformers" in failed  # its advice, from its next lines, on this one
    assert "Traceback" not in err + "\n".join(lines)


def checked(path: Path, tmp_path: Path, capsys, code: int = 0) -> tuple[list[str], str]:
    """(``harness check``'s stdout lines, its stderr), the run's cache in ``tmp_path``."""
    assert cli_main(["check", str(path), "--cache-dir", str(tmp_path / "cache")]) == code
    out = capsys.readouterr()
    return out.out.splitlines(), out.err


def unknown_model_type(tiny_llama, tmp_path: Path) -> Path:
    model = copy_of(tiny_llama, tmp_path / "unknown-type")
    edit_json(model / "config.json", lambda c: c.update(model_type="nosuchmodel", architectures=["NoSuchForCausalLM"]))
    return model


@pytest.mark.skipif(find_spec("transformers") is None, reason="no hf extra")
def test_check_refuses_a_model_type_transformers_does_not_know_when_the_gate_needs_its_reference(
    write_scenario, tiny_llama, tmp_path, capsys
):
    import transformers

    model = unknown_model_type(tiny_llama, tmp_path)
    path = write_scenario(tiny(model=str(model), gate={"tokens": 4, "prompts": 1}, sweep={"adapter": ["hf"]}))
    lines, err = checked(path, tmp_path, capsys, code=2)
    assert lines == []
    assert err.splitlines() == [
        f"ERROR {path}: model.source: {model / 'config.json'}: HF reference (transformers) would fail for every point "
        "(the gate and accuracy compare against transformers on this checkpoint): model_type 'nosuchmodel' is not an "
        f"architecture transformers {transformers.__version__} knows; expected a model_type it knows (a transformers "
        "that has the architecture, or model.trust_remote_code with the checkpoint's auto_map code)"
    ]


@pytest.mark.skipif(find_spec("transformers") is None, reason="no hf extra")
def test_check_lists_the_points_transformers_cannot_load_as_points_that_will_fail(
    write_scenario, tiny_llama, tmp_path, capsys
):
    model = unknown_model_type(tiny_llama, tmp_path)
    (line,) = checked(write_scenario(tiny(model=str(model), sweep={"adapter": ["hf"]})), tmp_path, capsys)[0]
    assert line.startswith(
        f"scenario::hf-cpu-bf16  will fail: {model / 'config.json'}: checkpoint load (transformers): model_type "
        "'nosuchmodel' is not an architecture transformers "
    ), line
    clean = copy_of(tiny_llama, tmp_path / "clean")
    assert checked(write_scenario(tiny(model=str(clean), sweep={"adapter": ["hf"]})), tmp_path, capsys)[0] == [
        "scenario::hf-cpu-bf16"
    ]


@pytest.mark.skipif(
    not all(find_spec(m) for m in ("openvino_genai", "openvino_tokenizers", "optimum")), reason="no openvino extra"
)
def test_check_lists_the_openvino_points_whose_tokenizer_the_converter_refuses_in_the_runs_words(
    write_scenario, tiny_llama, tmp_path, capsys
):
    clean = copy_of(tiny_llama, tmp_path / "clean")
    sweep = {"adapter": ["openvino"], "device": ["CPU"]}
    (line,) = checked(write_scenario(tiny(model=str(clean), sweep=sweep)), tmp_path, capsys)[0]
    assert "will" not in line
    model = copy_of(tiny_llama, tmp_path / "odd-tokenizer")
    edit_json(
        model / "tokenizer.json", lambda t: t.update(pre_tokenizer={"type": "CharDelimiterSplit", "delimiter": "_"})
    )
    path = write_scenario(tiny(model=str(model), sweep=sweep))
    (line,) = checked(path, tmp_path, capsys)[0]
    point, _, said = line.partition("  will fail: ")
    assert point.startswith("scenario::openvino-CPU-"), line
    assert said == (  # the very line the run's point fails with (the first test of this file)
        f"{model / 'tokenizer.json'}: tokenizer conversion (openvino_tokenizers) failed: OVTypeError: Pre-tokenizer "
        "type 'CharDelimiterSplit' is not supported: 'CharDelimiterSplit'"
    ), line
    assert len(list((tmp_path / "cache" / "openvino" / "tokenizer-checks").glob("*.json"))) == 2  # kept, both
