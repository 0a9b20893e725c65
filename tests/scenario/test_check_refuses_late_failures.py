"""Values `harness check` used to accept that could only fail at run time, never finish, or make a scenario
vanish: refused before any work, one line naming file, line and field, exit 2."""

from __future__ import annotations

import pytest

from harness import cli
from harness.scenario.fields import MAX_THREADS

BASE = "model: tiny-llama\nsweep: {adapter: [hf]}\n"


@pytest.mark.parametrize(
    "extra, field, words",
    [
        ("name: references\n", "name", "own store"),  # its records would land in the reference store, unread
        ("measurement: {threads: 100000}\n", "measurement.threads", f"less than or equal to {MAX_THREADS}"),
        ("measurement: {launches: 1000000}\n", "measurement.launches", "less than or equal to 1000"),
        ("measurement: {launches: 2, target_rel_ci: 0.1, max_launches: 5000}\n", "measurement.max_launches", "1000"),
        ("gate: {prompts: []}\n", "gate.prompts", "at least 1 item"),  # was a NaN-in-JSON error after the run
        ("gate: {prompts: ['']}\n", "gate.prompts", "at least 1 character"),
        ("generation: {<<: {max_new_tokens: 4}}\n", "generation", "merge keys"),  # bypassed the duplicate check
        ("generation: {max_new_tokens: 4, <<: {max_new_tokens: 8}}\n", "generation", "merge keys"),
    ],
)
def test_check_refuses_what_would_fail_later(tmp_path, capsys, extra, field, words):
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE + extra)
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and f"{field}" in err and words in err, err
    assert "Traceback" not in err


def test_a_scenario_named_references_is_refused_by_run_before_any_point(tmp_path, capsys):
    path = tmp_path / "scenario.yaml"
    path.write_text("name: references\n" + BASE)
    assert cli.main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"]) == 2
    assert not (tmp_path / "results" / "references").exists()
    assert "own store" in capsys.readouterr().err


def test_a_garbage_file_as_the_history_database_is_one_line(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    garbage = tmp_path / "h.sqlite"
    garbage.write_bytes(b"this is not a database\n" * 200)
    assert cli.main(["history", "list", "--db", f"sqlite:///{garbage}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "h.sqlite" in err and "cannot open" in err, err


@pytest.mark.parametrize("penalty", ["nan", "inf", "0", "-1", "x"])
def test_history_check_refuses_a_penalty_that_is_not_a_positive_number(tmp_path, capsys, penalty):
    with pytest.raises(SystemExit) as exited:  # argparse: usage line and exit 2, no traceback
        cli.main(["history", "check", "--db", f"sqlite:///{tmp_path / 'h.sqlite'}", "--penalty", penalty])
    assert exited.value.code == 2 and "expected a finite number > 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--timeout", "0", "expected seconds, between 1 and 604800"),
        ("--timeout", "-5", "between 1 and"),
        ("--timeout", "nan", "between 1 and"),
        ("--memory-limit-mb", "0", "at least 1,024"),
        ("--memory-limit-mb", "512", "at least 1,024"),  # every point failed with an unrelated ImportError
        ("--launches", "1000000", "between 1 and 1,000"),  # an ETA of 231 h
        ("--max-points", "0", "between 1 and"),
    ],
)
def test_run_options_that_could_only_fail_later_are_refused_before_any_work(tmp_path, capsys, option, value, says):
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE)
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", str(path), "--results", str(tmp_path / "r"), option, value])
    assert exited.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("text", ["tpot=5", "ttft=0.1"])
def test_a_threshold_without_its_unit_is_refused(tmp_path, capsys, text):
    argv = ["gate", str(tmp_path), "--baseline", "x", "--baselines-dir", str(tmp_path), "--max-regression", text]
    assert cli.main(argv) == 2
    assert "give the limit with %" in capsys.readouterr().err


def test_run_refuses_a_gate_k_beyond_the_vocabulary_before_any_point(tmp_path, capsys, tiny_llama):
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE + "gate: {k: 100000000}\n")  # tiny-llama's vocabulary is far smaller
    assert cli.main(["run", str(path), "--results", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: gate.k: 100000000 is more than the model's vocabulary" in err, err
    assert not list((tmp_path / "r").rglob("*.json"))  # no point ran


def test_the_vocabulary_check_reads_the_config_not_the_tokenizer(tmp_path, capsys, tiny_llama, monkeypatch):
    """The run's own process parses no tokenizer.json for its checks (Gemma's takes ~2 s; each worker parses
    its own): the gate's top-k ranks the logits, whose width the checkpoint's config gives."""
    from harness.models import sources

    def parsed(model):
        raise AssertionError(f"{model.hf_dir}/tokenizer.json was parsed")

    monkeypatch.setattr(sources.ResolvedModel, "tokenizer", parsed)
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE + "gate: {k: 100000000}\n")
    assert cli.main(["run", str(path), "--results", str(tmp_path / "r"), "--no-progress"]) == 2
    assert "gate.k: 100000000 is more than the model's vocabulary" in capsys.readouterr().err


def test_run_refuses_an_unknown_accuracy_task_before_any_point(tmp_path, capsys, tiny_llama):
    pytest.importorskip("lm_eval")
    path = tmp_path / "scenario.yaml"
    path.write_text(BASE + "accuracy: {tasks: [harness_clozee], limit: 2}\n")
    assert cli.main(["run", str(path), "--results", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: accuracy.tasks: 'harness_clozee' unknown: not shipped" in err, err
    assert not list((tmp_path / "r").rglob("*.json"))  # no point ran
