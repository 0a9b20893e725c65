"""Records and baselines are read as physics, not just as shapes (issue 38): a latency below or at zero, a
duration of 1e308 ms, a negative count or KL, an unknown verdict word, a point id that climbs out of its
directory, a median outside its launches' range: every reader refuses the file in one line naming it and the
field, exit 2, and a baseline poisoned this way never lets the gate pass. An interrupted point's
``incomplete`` record is refused the same way (its sweep test: tests/run/test_interrupted_launches.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.records import store
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from tests import records as synthetic
from tests.conftest import registered
from tests.fakes import NegativeMetricsAdapter
from tests.refusals import refused_in_one_line
from tests.tiny_scenario import tiny

POINT = "hf-cpu-bf16"


def _launches(data: dict) -> None:
    """Two launches whose TPOT medians (10, 12 ms) the record's 50 ms TPOT lies far outside."""
    data["samples"]["launches"] = [{"index": i, "medians": {"tpot_ms": v}} for i, v in enumerate((10.0, 12.0))]


IMPOSSIBLE = {  # class: (change, field named)
    "negative-latency": (lambda d: d["metrics"].update(tpot_ms=-5.0), "metrics.tpot_ms"),
    "zero-latency": (lambda d: d["metrics"].update(ttft_ms=0.0), "metrics.ttft_ms"),
    "absurd-latency": (lambda d: d["metrics"].update(tpot_ms=1e308), "metrics.tpot_ms"),
    "negative-count": (lambda d: d["metrics"].update(generated_tokens=-3), "metrics.generated_tokens"),
    "negative-round": (lambda d: d["samples"]["rounds"][0].update(ttft_s=-0.1), "samples.rounds.0.ttft_s"),
    "negative-kl": (lambda d: d["correctness"].update(kl_mean=-0.5), "correctness.kl_mean"),
    "unknown-verdict": (lambda d: d["correctness"].update(verdict="great"), "correctness.verdict"),
    "escaping-point-id": (lambda d: d.update(point_id="../../etc/passwd"), "point_id"),
    "median-outside-launches": (_launches, "metrics.tpot_ms"),
    "incomplete": (lambda d: d.update(status="incomplete"), "status: incomplete"),
}


def _poison(directory: Path, change) -> Path:
    path = directory / "demo" / f"{POINT}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def dirs(tmp_path) -> tuple[Path, Path]:
    """(a good results directory, one about to be poisoned), the same point in each."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    store.write(synthetic.record(POINT, seed=1), good)
    store.write(synthetic.record(POINT, seed=2), bad)
    return good, bad


def _commands(good: Path, bad: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "summary": ["summary", str(bad)],
        "report": ["report", str(bad), "-o", str(tmp_path / "report")],
        "compare": ["compare", str(good), str(bad)],
        "gate": ["gate", str(bad), "--baseline", str(good)],
        "gate-poisoned-baseline": ["gate", str(good), "--baseline", str(bad)],
        "baseline-save": ["baseline", "save", str(bad), "--name", "b", "--baselines-dir", str(tmp_path / "bl")],
        "history-add": ["history", "add", str(bad), "--db", f"sqlite:///{tmp_path / 'h.db'}"],
        "merge": ["merge", str(bad), "-o", str(tmp_path / "merged")],
        "export": ["export", str(bad), "-o", str(tmp_path / "x.jsonl")],
    }


COMMANDS = list(_commands(Path("g"), Path("b"), Path("t")))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", list(IMPOSSIBLE))
def test_every_reader_refuses_an_impossible_record_naming_file_and_field(kind, command, dirs, tmp_path, capsys):
    good, bad = dirs
    change, field = IMPOSSIBLE[kind]
    poisoned = _poison(bad, change)
    line = refused_in_one_line(_commands(good, bad, tmp_path)[command], capsys)
    assert f"{poisoned}: {field}" in line
    assert not (tmp_path / "bl" / "b").exists() and not (tmp_path / "merged").exists()


def test_a_baseline_saved_poisoned_never_lets_the_gate_pass(dirs, tmp_path, capsys):
    """A baseline directory edited after it was saved: a negative TPOT would make any new figure a 'regression'
    in the wrong direction, or none at all; the gate refuses it instead of judging against it."""
    good, bad = dirs
    assert cli.main(["baseline", "save", str(bad), "--name", "b", "--baselines-dir", str(tmp_path / "bl")]) == 0
    capsys.readouterr()
    saved = tmp_path / "bl" / "b"
    poisoned = _poison(saved, lambda d: d["metrics"].update(tpot_ms=-50.0, ttft_ms=-1.0))
    line = refused_in_one_line(["gate", str(good), "--baseline", "b", "--baselines-dir", str(tmp_path / "bl")], capsys)
    assert f"{poisoned}: metrics." in line


def test_possible_edge_values_are_read(dirs, tmp_path, capsys):
    """What real engines give stays readable: a zero engine counter (ms resolution), zero energy, zero KL, a
    median at its launches' edge, a t interval whose low bound is negative."""
    good, bad = dirs

    def edge(data):
        data["metrics"].update(engine_prompt_eval_ms=0, energy_j=0.0, ms_per_token_stddev=0.0, tpot_ms=12.0)
        data["correctness"].update(kl_mean=0.0)
        data["samples"]["launches"] = [{"index": i, "medians": {"tpot_ms": v}} for i, v in enumerate((10.0, 12.0))]
        data["samples"]["intervals"] = {"tpot_ms": {"estimate": 11.0, "low": -1.7, "high": 23.7, "launches": 2}}

    _poison(bad, edge)
    assert cli.main(["summary", str(bad)]) == 0, capsys.readouterr().err


@pytest.fixture
def negative_adapter(fake_adapters):
    yield from registered([NegativeMetricsAdapter])


def test_an_engine_that_reports_an_impossible_figure_fails_its_point_and_the_record_stays_readable(
    write_scenario, tmp_path, negative_adapter, capsys
):
    """As for a NaN: the figure is null with the reason, the point failed, and every reader can read the record
    the run wrote (the harness never writes what it would refuse)."""
    scenario = planning.load(write_scenario(tiny(sweep={"adapter": ["fake-negative-metrics"]})))
    out = tmp_path / "results"
    (record,) = Runner(RunSettings(results_dir=out, isolation="none", energy=False)).run([scenario], progress=False)
    assert record.status == "failed" and "metrics.engine_ttft_ms: expected a value >= 0, got -3.0" in record.reason
    assert record.metrics["engine_ttft_ms"] is None and "impossible" in record.unavailable["engine_ttft_ms"]
    assert record.metrics["tpot_ms"] is not None  # the host's own timings are kept
    assert cli.main(["summary", str(out)]) == 0
    assert "FAILED" in capsys.readouterr().out.upper()  # read back, the failed point shown
