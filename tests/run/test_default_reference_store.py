"""A run given no reference directory (``RunSettings()``, as Python callers and most tests build it) keeps its
gate references in ``$HARNESS_REFERENCE_DIR`` when set: tests/conftest.py points it at the session's store, so
an old ``results/references/`` in the working directory (a developer checkout's) never decides a test."""

from __future__ import annotations

from pathlib import Path

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings, default_reference_dir
from harness.scenario.sweep import expand
from tests.tiny_scenario import tiny


def test_the_default_store_is_the_environments_else_results_references(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_REFERENCE_DIR", str(tmp_path / "store"))
    assert RunSettings().reference_store == tmp_path / "store" == default_reference_dir()
    assert RunSettings(reference_dir=tmp_path / "given").reference_store == tmp_path / "given"
    monkeypatch.delenv("HARNESS_REFERENCE_DIR")
    assert RunSettings().reference_store == Path("results") / "references"


def test_a_stale_reference_in_the_working_directory_is_never_read(write_scenario, tmp_path, monkeypatch, tiny_llama):
    gated = tiny(
        sweep={"adapter": ["hf"], "device": ["cpu"]}, measurement={"threads": 2}, gate={"tokens": 4, "prompts": 1}
    )
    loaded = planning.load(write_scenario(gated))
    (point,) = expand(loaded)
    planted = tmp_path / "planted"
    settings = RunSettings(results_dir=tmp_path / "first", reference_dir=planted, energy=False)
    first = Runner(settings).run_point(loaded, point)
    assert first.status == "ok" and first.verdict is not None, first.reason
    checkout = tmp_path / "checkout"
    stale = [checkout / "results" / "references" / path.relative_to(planted) for path in planted.rglob("*.json")]
    assert stale, "the first run stored no reference"
    for path in stale:  # the same references' files, gone stale: unreadable
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{stale", encoding="utf-8")
    monkeypatch.chdir(checkout)
    second = Runner(RunSettings(results_dir=tmp_path / "second", energy=False)).run_point(loaded, point)
    assert second.status == "ok" and second.verdict == first.verdict, second.reason
    assert all(path.read_text(encoding="utf-8") == "{stale" for path in stale)  # neither read nor rewritten
