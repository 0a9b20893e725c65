"""Stored references are keyed by the model's content, not its name, and prove their own content: two models
that share a name (two seeds of tiny-llama, each in a folder called ``model``) are gated from one
``--reference-dir`` in one ``harness run``, in this process and in workers; an edited reference is refused in
one line naming the file; refreshing one model's reference leaves the other's alone; a reference store that
cannot be written fails the point with the command that completes the set. On tiny-llama (transformers)."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli.app import main
from harness.models import sources
from harness.records import store
from harness.scenario.schema import ModelSpec

pytest.importorskip("torch")

SCENARIO = """
name: {name}
model: {model}
generation: {{max_new_tokens: 4}}
measurement: {{warmup_rounds: 0, min_rounds: 1, threads: 2}}
gate: {{tokens: 8, prompts: 2}}
sweep:
  adapter: [hf]
"""


@pytest.fixture(scope="module")
def two_models_named_model(tmp_path_factory, cache_dir) -> tuple[Path, Path]:
    """tiny-llama seeds 0 and 1, as HF checkpoints in two folders that are both called ``model``."""
    root = tmp_path_factory.mktemp("models")
    folders = []
    for seed in (0, 1):
        built = sources.resolve(ModelSpec(source="tiny-llama", seed=seed), cache_dir)
        folder = root / f"seed{seed}" / "model"
        shutil.copytree(built.hf_dir, folder, ignore=shutil.ignore_patterns("harness-*"))
        folders.append(folder)
    return folders[0], folders[1]


@pytest.fixture(scope="module")
def scenarios(two_models_named_model, tmp_path_factory) -> tuple[Path, Path]:
    first, second = two_models_named_model
    folder = tmp_path_factory.mktemp("scenarios")
    paths = folder / "first.yaml", folder / "second.yaml"
    for path, name, model in zip(paths, ("first", "second"), (first, second)):
        path.write_text(SCENARIO.format(name=name, model=model))
    return paths


@dataclass(frozen=True)
class BothRun:
    """One ``harness run`` of both scenarios into a fresh ``--reference-dir``: its exit code, output and folders."""

    code: int
    output: str
    results: Path
    references: Path


@pytest.fixture(scope="module")
def both_run(scenarios, tmp_path_factory):
    """``harness run`` of both scenarios into a fresh store, once per isolation mode in this module: the two-models
    test reads it, and the tests that start from both models' stored references copy the ``none`` run's store
    instead of computing them again."""
    runs: dict[str, BothRun] = {}

    def get(isolation: str) -> BothRun:
        if isolation not in runs:
            root = tmp_path_factory.mktemp(f"both-{isolation}")
            results, references = root / "results", root / "references"
            with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
                code = _run(*scenarios, "--results", results, "--reference-dir", references, "--isolation", isolation)
            runs[isolation] = BothRun(code, out.getvalue() + err.getvalue(), results, references)
        return runs[isolation]

    return get


def _stored_copy(both_run, tmp_path: Path) -> Path:
    """A copy of the store in which one run stored both models' references."""
    run = both_run("none")
    assert run.code == 0, run.output
    return Path(shutil.copytree(run.references, tmp_path / "references"))


def _stored_for(references: Path, folder: Path) -> Path:
    """The gate reference stored for the model in ``folder``."""
    checksum = sources.resolve(ModelSpec(source=str(folder))).checksum
    (path,) = [
        p for p in _gate_references(references / "model") if json.loads(p.read_text())["model"]["checksum"] == checksum
    ]
    return path


def _gate_references(folder: Path) -> list[Path]:
    """The gate references stored in ``folder``, not the stop prompts' (``correctness.stopping``) beside them."""

    def first_kind(path: Path):
        return (json.loads(path.read_text()).get("prompts") or [{}])[0].get("kind")

    return sorted(p for p in folder.glob("*.json") if first_kind(p) != "dialogue")


def _run(*args) -> int:
    """``harness run`` in this process, unless ``args`` ask for workers (the later ``--isolation`` wins)."""
    return main(["run", "--isolation", "none", *map(str, args), "--no-progress", "--no-energy"])


def _verdicts(results: Path) -> dict[str, tuple[str, str]]:
    return {
        name: (record.status, record.correctness.verdict if record.correctness else None)
        for name in ("first", "second")
        for _, record in store.iter_records(results / name)
    }


@pytest.mark.parametrize("isolation", ["none", "worker"])
def test_two_models_with_one_name_are_gated_from_one_store_in_one_run(scenarios, both_run, isolation):
    run = both_run(isolation)
    assert run.code == 0, run.output
    assert _verdicts(run.results) == {"first": ("ok", "pass"), "second": ("ok", "pass")}
    assert "does not match" not in run.output
    stored = _gate_references(run.references / "model")
    assert len(stored) == 2  # one per model, not one per name
    assert {json.loads(p.read_text())["model"]["checksum"] for p in stored} == {
        sources.resolve(ModelSpec(source=str(folder))).checksum for folder in _folders(scenarios)
    }


def _folders(scenarios) -> list[Path]:
    import yaml

    return [Path(yaml.safe_load(path.read_text())["model"]) for path in scenarios]


def test_refreshing_one_model_s_reference_leaves_the_other_s_alone(scenarios, both_run, tmp_path, capsys):
    references = _stored_copy(both_run, tmp_path)  # both models' references, stored by one run
    first_folder, second_folder = _folders(scenarios)
    first, second = _stored_for(references, first_folder), _stored_for(references, second_folder)
    before = second.read_bytes(), second.stat().st_mtime_ns
    first_before = first.stat().st_mtime_ns
    capsys.readouterr()

    code = _run(scenarios[0], "--results", tmp_path / "again", "--reference-dir", references, "--refresh-reference")
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert f"stored at {first}" in err
    assert first.stat().st_mtime_ns != first_before
    assert (second.read_bytes(), second.stat().st_mtime_ns) == before
    # and the other model is still gated from the store, reusing its untouched reference
    assert _run(scenarios[1], "--results", tmp_path / "third", "--reference-dir", references) == 0
    assert f"reference: reused {second}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "edit, part",
    [
        (lambda data: data["prompts"][0]["tokens"].__setitem__(0, 7), "prompts[0].tokens"),
        (lambda data: data["prompts"][0]["top_ids"][1].reverse(), "prompts[0].top_ids"),
        (lambda data: data["noise_floor"].__setitem__("kl_mean", 10.0), "noise_floor.kl_mean"),
    ],
    ids=["tokens", "top-ids", "floor"],
)
def test_an_edited_stored_reference_is_refused_in_one_line_naming_the_file(
    scenarios, both_run, tmp_path, capsys, edit, part
):
    references = _stored_copy(both_run, tmp_path)
    path = _stored_for(references, _folders(scenarios)[0])
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    capsys.readouterr()

    assert _run(scenarios[0], "--results", tmp_path / "again", "--reference-dir", references) == 1
    out, err = capsys.readouterr()
    (record,) = [r for _, r in store.iter_records(tmp_path / "again" / "first")]
    assert record.status == "failed" and "Traceback" not in out + err
    assert record.reason.count("\n") == 0
    assert f"stored reference {path}: content differs from its digest in {part}" in record.reason
    assert "--refresh-reference" in record.reason
    # rebuilding it is what the line says to do
    assert (
        _run(scenarios[0], "--results", tmp_path / "rebuilt", "--reference-dir", references, "--refresh-reference") == 0
    )


def test_a_reference_stored_before_content_keys_is_refused_with_the_rebuild_command(scenarios, tmp_path, capsys):
    from harness.correctness.reference import ReferenceSettings, ReferenceStore
    from harness.models import prompts

    references = tmp_path / "references"
    store_ = ReferenceStore(references)
    settings = ReferenceSettings(tokens=8, threads=2)
    legacy = store_.legacy_path("model", prompts.select_gate_prompts(2), settings)
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"schema_version": 2, "model": {"name": "model"}}))

    assert _run(scenarios[0], "--results", tmp_path / "results", "--reference-dir", references) == 1
    (record,) = [r for _, r in store.iter_records(tmp_path / "results" / "first")]
    assert f"stored reference {legacy}: stored before references were keyed by the model's content" in record.reason
    assert "rebuild it with --refresh-reference" in record.reason
    capsys.readouterr()
    assert (
        _run(scenarios[0], "--results", tmp_path / "again", "--reference-dir", references, "--refresh-reference") == 0
    )
    assert legacy.exists() and len(_gate_references(references / "model")) == 2


def test_a_reference_store_that_cannot_be_written_fails_the_point_with_the_resume_command(scenarios, tmp_path):
    references = tmp_path / "references"
    references.mkdir()
    (references / "model").write_text("")  # where the model's folder of references goes: writes there fail
    code = _run(scenarios[0], "--results", tmp_path / "results", "--reference-dir", references)
    assert code == 1
    (record,) = [r for _, r in store.iter_records(tmp_path / "results" / "first")]
    assert record.status == "failed" and record.reason.startswith(f"WriteFailed: cannot write {references / 'model'}")
    assert record.failure is None  # one line, no traceback
    assert (
        f"complete the set with: harness run {scenarios[0]} --results {tmp_path / 'results'} "
        f"--reference-dir {references} --resume"
    ) in record.reason


def test_a_half_built_conversion_folder_is_not_used(write_scenario, tmp_path, capsys, cache_dir, fake_adapters):
    from tests.tiny_scenario import tiny

    built = sources.resolve(ModelSpec(source="tiny-llama"), cache_dir)  # for its folder's name only
    cache = tmp_path / "cache"
    target = cache / "models" / built.hf_dir.name
    target.mkdir(parents=True)
    shutil.copy(built.hf_dir / "config.json", target)  # a build cut short: a config, no weights, no marker
    killed = cache / "models" / f".{target.name}.building-abcd1234"  # a build killed with SIGKILL
    killed.mkdir()
    path = write_scenario(tiny(name="half"))

    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--cache-dir", str(cache), "--no-progress"]
    code = main([*argv, "--isolation", "none"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert f"note: removing {target}," in err and f"note: removing {killed}," in err
    assert not killed.exists() and (target / "harness-model.json").exists() and (target / "tokenizer.json").exists()
