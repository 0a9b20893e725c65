"""A point whose preparation fails says which step failed and for which file, with the engine's own words after
it; a checkpoint transformers cannot run fails its HF reference once, not once per point."""

from __future__ import annotations

import json
import shutil

from harness.correctness.reference import ReferenceStore
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from tests.tiny_scenario import tiny


def test_a_checkpoint_transformers_cannot_run_fails_each_point_naming_the_hf_reference_once(
    write_scenario, tmp_path, tiny_llama, fake_adapters, monkeypatch
):
    broken = tmp_path / "broken-llama"
    shutil.copytree(tiny_llama.hf_dir, broken, ignore=shutil.ignore_patterns("harness-*"))
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "intermediate_size": 96}))  # weights are 128 wide
    computed = []
    compute = ReferenceStore.get_or_compute
    monkeypatch.setattr(ReferenceStore, "get_or_compute", lambda *a, **k: computed.append(1) or compute(*a, **k))
    text = tiny(model=str(broken), gate={"tokens": 4, "prompts": 1}, sweep={"adapter": ["fake"], "prompt_len": [8, 16]})
    loaded = planning.load(write_scenario(text))
    records = Runner(RunSettings(results_dir=tmp_path / "results", energy=False)).run([loaded], progress=False)
    assert len(records) == 2 and len(computed) == 1  # the second point reuses the first one's failure
    for record in records:
        assert record.status == "failed"
        assert record.reason.startswith(
            f"StepFailed: {broken}: HF reference (transformers): checkpoint load (transformers) failed: RuntimeError: "
        ), record.reason
        assert "Traceback" in record.failure.traceback  # the engine's traceback is kept beside the one line


def test_an_engine_message_over_several_lines_is_one_line_naming_the_step_and_the_file(tmp_path):
    import pytest

    from harness.errors import StepFailed, step

    with pytest.raises(StepFailed) as failed, step(tmp_path / "m", "checkpoint load (transformers)"):
        raise ValueError("model type `x` is not known.\n\n  Update transformers:\n  pip install -U transformers\n")
    assert str(failed.value) == (
        f"{tmp_path / 'm'}: checkpoint load (transformers) failed: ValueError: model type `x` is not known. Update "
        "transformers: pip install -U transformers"
    )
    assert isinstance(failed.value.__cause__, ValueError)  # the engine's own exception, traceback and all, kept


def test_a_step_that_failed_once_fails_the_same_file_again_without_running_inside_a_run(tmp_path):
    import pytest

    from harness.errors import StepFailed, remembering, step

    ran, failures = [], {}

    def convert(where):
        with step(where, "tokenizer conversion (openvino_tokenizers)", once=True):
            ran.append(where)
            raise RuntimeError("Check 'i < m_inputs.size()' failed")

    with remembering(failures):
        for _ in range(2):
            with pytest.raises(StepFailed) as failed:
                convert(tmp_path / "a" / "tokenizer.json")
            assert str(failed.value).endswith(
                "tokenizer conversion (openvino_tokenizers) failed: RuntimeError: Check 'i < m_inputs.size()' failed"
            )
            assert isinstance(failed.value.__cause__, RuntimeError)  # the engine's own exception, as the first time
        with pytest.raises(StepFailed):
            convert(tmp_path / "b" / "tokenizer.json")  # another file: its own conversion
    assert ran == [tmp_path / "a" / "tokenizer.json", tmp_path / "b" / "tokenizer.json"]
    assert len(failures) == 2
    with pytest.raises(StepFailed):
        convert(tmp_path / "a" / "tokenizer.json")  # outside a run nothing is remembered: it runs again
    assert len(ran) == 3
