"""Hostile values (issue 17): non-finite engine figures, unwritable outputs, malformed records, empty
baselines, concurrent stores, huge sweeps and duplicate scenario names. Each gives a failed record
(engine-side faults) or one line naming the file and field, exit 2, no traceback."""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path

import pytest

from harness import cli
from harness.accuracy.evaluate import Evaluation
from harness.errors import UsageError
from harness.io import check_writable_dir, check_writable_file, write_json_atomic
from harness.records import store as record_store
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from tests import records as synthetic
from tests.conftest import registered
from tests.fakes import NONFINITE
from tests.refusals import refused_in_one_line
from tests.tiny_scenario import tiny

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@pytest.fixture
def nonfinite_adapters(fake_adapters):
    yield from registered(NONFINITE)


NAN_SWEEP = tiny(
    prompts=["x"], measurement={"min_rounds": 2}, sweep={"adapter": ["fake-nan-metrics", "fake-nan-clock", "fake"]}
)


# -- 1. NaN and infinity from an engine ---------------------------------------------------------------


@pytest.mark.parametrize("isolate", [False, True], ids=["isolation-none", "isolation-point"])
def test_an_engine_that_reports_nan_fails_only_its_point_and_records_stay_strict_json(
    write_scenario, tmp_path, nonfinite_adapters, isolate
):
    from harness.run.settings import Limits

    loaded = planning.load(write_scenario(NAN_SWEEP, "nan.yaml"))
    runner = Runner(
        RunSettings(
            results_dir=tmp_path / "results",
            isolation="worker" if isolate else "none",
            energy=False,
            limits=Limits(timeout_s=120),
        )
    )
    records = {r.point_id: r for r in runner.run([loaded], progress=False)}
    assert len(records) == 3

    metrics = records["fake-nan-metrics-cpu-bf16"]
    assert metrics.status == "failed"
    assert "the engine produced a non-finite value (nan)" in metrics.reason
    assert metrics.metrics["engine_throughput"] is None
    assert metrics.unavailable["engine_throughput"] == "the engine produced a non-finite value (nan)"
    assert metrics.unavailable["engine_ttft_ms"] == "the engine produced a non-finite value (inf)"
    assert metrics.metrics["tpot_ms"] is not None  # the host's own timings are kept

    clock = records["fake-nan-clock-cpu-bf16"]
    assert clock.status == "failed"
    assert clock.reason == "NonFinite: the engine produced a non-finite value (nan) in its token timestamps"
    assert clock.failure is None  # a diagnosis, not a crash: no traceback

    assert records["fake-cpu-bf16"].status == "ok"  # the sweep went on
    for path in (tmp_path / "results").rglob("*.json"):
        json.loads(path.read_text(), parse_constant=lambda word, path=path: pytest.fail(f"{path} holds {word}"))
    assert {r.point_id: r.status for r in map(record_store.read, (tmp_path / "results").rglob("*.json"))} == {
        pid: r.status for pid, r in records.items()
    }


def test_non_finite_values_outside_metrics_are_dropped_and_fail_the_point():
    from harness.run.steps import finite

    rec = synthetic.record("p")
    rec.correctness.kl_mean = math.nan
    rec.samples.rounds[0].gaps_s[0] = math.inf
    rec.engine.extra["engine_score"] = -math.inf
    fields = finite.scrub(rec)
    assert rec.status == "failed" and rec.reason.startswith(
        "the engine produced a non-finite value (inf) in samples.rounds.0.gaps_s.0"
    )
    assert {"samples.rounds.0.gaps_s.0", "correctness.kl_mean", "engine.extra.engine_score"} <= set(fields)
    assert rec.correctness.kl_mean is None and rec.correctness.verdict == "pass"  # the rest of the part stays
    assert rec.samples.rounds == [] and "engine_score" not in rec.engine.extra
    json.dumps(rec.to_dict(), allow_nan=False)  # strict JSON again


# -- 2. output paths, checked before anything runs ----------------------------------------------------


@pytest.fixture
def blocker(tmp_path) -> Path:
    """A regular file where a directory is expected."""
    path = tmp_path / "a-file"
    path.write_text("not a directory")
    return path


@pytest.fixture
def records_dir(tmp_path) -> Path:
    out = tmp_path / "records"
    for pid, seed in (("hf-cpu-bf16", 1), ("hf-cpu-bf16-seq256", 2)):
        record_store.write(synthetic.record(pid, seed=seed), out)
    return out


FAKE_SCENARIO = tiny(prompts=["x"], generation={"max_new_tokens": 2})


@pytest.mark.parametrize("command", ["run", "verify"])
@pytest.mark.parametrize("case", ["is-a-file", "parent-is-a-file"])
def test_run_and_verify_refuse_an_unusable_results_path_before_any_point(
    command, case, write_scenario, blocker, capsys, fake_adapters, monkeypatch
):
    from harness.run import steps

    ran = []
    monkeypatch.setattr(steps, "execute", lambda *a, **k: ran.append(a) or pytest.fail("a point ran"))
    scenario = write_scenario(tiny(prompts=["x"], generation={"max_new_tokens": 2}, gate={"prompts": 1, "tokens": 2}))
    target = blocker if case == "is-a-file" else blocker / "results"
    line = refused_in_one_line(
        [command, str(scenario), "--results", str(target), "--isolation", "none", "--no-energy"]
        + (["--no-progress"] if command == "run" else []),
        capsys,
    )
    assert f"--results {target}:" in line
    assert ("is a file, not a directory" if case == "is-a-file" else f"{blocker} is a file") in line
    assert not ran


@pytest.mark.parametrize("option", ["--reference-dir", "--cache-dir"])
def test_run_refuses_an_unusable_reference_or_cache_dir_before_any_point(
    option, write_scenario, blocker, tmp_path, capsys, fake_adapters, monkeypatch
):
    from harness.run import steps

    monkeypatch.setattr(steps, "execute", lambda *a, **k: pytest.fail("a point ran"))
    scenario = write_scenario(FAKE_SCENARIO)
    target = blocker / "store"
    argv = ["run", str(scenario), "--results", str(tmp_path / "results"), option, str(target), "--no-progress"]
    line = refused_in_one_line([*argv, "--isolation", "none", "--no-energy"], capsys)
    assert f"{option} {target}:" in line and f"{blocker} is a file" in line


@pytest.mark.skipif(ROOT, reason="root writes into read-only directories; the file cases above cover it")
def test_a_read_only_results_directory_is_refused(tmp_path):
    locked_dir = tmp_path / "ro"
    locked_dir.mkdir()
    locked_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(UsageError, match="is not writable"):
            check_writable_dir(locked_dir / "results", "--results")
    finally:
        locked_dir.chmod(stat.S_IRWXU)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["report", "{records}", "-o", "{bad}"], "report -o"),
        (["baseline", "save", "{records}", "--name", "b", "--baselines-dir", "{bad}"], "--baselines-dir"),
        (["merge", "{records}", "-o", "{bad}"], "merge -o"),
        (["compare", "{records}", "{records}", "--csv", "{bad}/table.csv"], "compare --csv"),
    ],
)
def test_every_writing_command_names_an_unusable_output(argv, option, records_dir, blocker, capsys):
    bad = blocker / "sub"
    line = refused_in_one_line([a.format(records=records_dir, bad=bad) for a in argv], capsys)
    assert option in line and str(blocker) in line and "is a file" in line


def test_report_refuses_a_non_empty_directory_it_did_not_write(records_dir, tmp_path, capsys):
    # Before: `report -o DIR` wrote into any directory (as root, `report -o /` wrote into `/`).
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "index.html").write_text("someone else's page")
    line = refused_in_one_line(["report", str(records_dir), "-o", str(theirs)], capsys)
    assert f"report -o {theirs}: not empty and holds no .harness-report" in line and "--replace" in line
    assert [p.name for p in theirs.iterdir()] == ["index.html"]  # refused before anything was written
    assert cli.main(["report", str(records_dir), "-o", str(theirs), "--replace"]) == 0
    assert "someone else's page" not in (theirs / "index.html").read_text()

    own = tmp_path / "own"
    assert cli.main(["report", str(records_dir), "-o", str(own)]) == 0
    assert cli.main(["report", str(records_dir), "-o", str(own)]) == 0  # its own report: rendered again


def test_compare_csv_that_is_a_directory_is_refused(records_dir, tmp_path, capsys):
    line = refused_in_one_line(["compare", str(records_dir), str(records_dir), "--csv", str(tmp_path)], capsys)
    assert f"compare --csv {tmp_path}: is a directory" in line


def test_history_db_under_a_file_is_refused(records_dir, blocker, capsys):
    pytest.importorskip("sqlalchemy")
    line = refused_in_one_line(["history", "add", str(records_dir), "--db", f"sqlite:///{blocker}/h.sqlite"], capsys)
    assert "--db" in line and str(blocker) in line


def test_pytest_refuses_an_unusable_results_directory_before_any_point(pytester, fake_adapters):
    (pytester.path / "blocker").write_text("x")
    pytester.makefile(".yaml", **{"scenarios/s": FAKE_SCENARIO})
    result = pytester.runpytest("scenarios/", "--harness-results", "blocker/results", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-results blocker/results: cannot create it, *blocker is a file*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_check_helpers_accept_what_can_be_written(tmp_path):
    assert check_writable_dir(tmp_path / "new" / "deeper", "--results") == tmp_path / "new" / "deeper"
    assert check_writable_file(tmp_path / "new" / "table.csv", "--csv") == tmp_path / "new" / "table.csv"
    assert not (tmp_path / "new").exists()  # checking creates nothing


# -- 3. record readers --------------------------------------------------------------------------------


def _corrupt(records_dir: Path, change) -> Path:
    path = records_dir / "demo" / "hf-cpu-bf16.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))  # NaN, when there is one, as Python writes it
    return path


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d.update(metrics=None), "metrics"),
        (lambda d: d.update(samples="rounds"), "samples"),
        (lambda d: d["metrics"].update(tpot_ms="fast"), "metrics.tpot_ms"),
        (lambda d: d["metrics"].update(tpot_ms=math.nan), "metrics.tpot_ms"),
        (lambda d: d.update(point=[1, 2]), "point"),
    ],
)
@pytest.mark.parametrize("command", ["report", "compare", "gate", "baseline-save"])
def test_malformed_records_are_refused_naming_file_and_field(command, change, field, records_dir, tmp_path, capsys):
    good = tmp_path / "good"
    record_store.write(synthetic.record("hf-cpu-bf16", seed=1), good)
    bad_file = _corrupt(records_dir, change)
    argv = {
        "report": ["report", str(records_dir), "-o", str(tmp_path / "report")],
        "compare": ["compare", str(good), str(records_dir)],
        "gate": ["gate", str(records_dir), "--baseline", str(good)],
        "baseline-save": [
            "baseline",
            "save",
            str(records_dir),
            "--name",
            "b",
            "--baselines-dir",
            str(tmp_path / "baselines"),
        ],
    }[command]
    line = refused_in_one_line(argv, capsys)
    assert f"{bad_file}: {field}" in line
    assert not (tmp_path / "baselines" / "b").exists()


def test_a_regression_check_against_a_baseline_holding_nan_names_the_file_and_field(records_dir, tmp_path, capsys):
    bad_file = _corrupt(records_dir, lambda d: d["metrics"].update(tpot_ms=math.inf))  # a hand-edited baseline
    new = tmp_path / "new"
    record_store.write(synthetic.record("hf-cpu-bf16", seed=3), new)
    line = refused_in_one_line(["gate", str(new), "--baseline", str(records_dir)], capsys)
    assert f"{bad_file}: metrics.tpot_ms: non-finite number inf" in line


# -- 4. a regression check that compared nothing has not passed ---------------------------------------


def test_the_regression_check_refuses_an_empty_baseline(records_dir, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    line = refused_in_one_line(["gate", str(records_dir), "--baseline", str(empty)], capsys)
    assert "the baseline holds no records" in line


def test_the_regression_check_refuses_a_baseline_with_no_point_in_common(records_dir, tmp_path, capsys):
    other = tmp_path / "other"
    record_store.write(synthetic.record("hf-cpu-bf16", scenario="another"), other)
    line = refused_in_one_line(["gate", str(records_dir), "--baseline", str(other)], capsys)
    assert "no records in common with the results" in line and "another" in line


def test_pytest_harness_baseline_refuses_a_baseline_with_nothing_to_compare(pytester, fake_adapters):
    (pytester.path / "baselines" / "empty").mkdir(parents=True)
    (pytester.path / "baselines" / "empty" / "baseline.json").write_text('{"kind": "harness-baseline"}')
    pytester.makefile(".yaml", **{"scenarios/s": FAKE_SCENARIO})
    result = pytester.runpytest(
        "scenarios/",
        "--harness-baseline",
        "empty",
        "--harness-baselines-dir",
        "baselines",
        "--harness-no-energy",
        "-p",
        "no:cacheprovider",
    )
    result.stdout.fnmatch_lines(["ERROR the baseline holds no records*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- 5. stores: modes, locks, concurrent writers ------------------------------------------------------


def test_records_and_baselines_respect_the_umask(records_dir, tmp_path):
    from harness.regression import baseline

    old = os.umask(0o022)
    try:
        written = write_json_atomic(tmp_path / "r" / "x.json", {"a": 1})
        target = baseline.save([records_dir], "shared", tmp_path / "baselines")
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert {stat.S_IMODE(p.stat().st_mode) for p in target.rglob("*.json")} == {0o644}
    assert not list((tmp_path / "r").glob(".*.tmp"))


def _store_worker(args):
    """One runner: fetch (or compute) the shared gate reference, read it back, write and read records."""
    root, marker, results_dir, index = args
    from harness.correctness.reference import ReferenceSettings, ReferenceStore
    from harness.models import sources
    from harness.scenario.schema import ModelSpec
    from tests import records as synthetic_records

    model = sources.resolve(ModelSpec(source="tiny-llama"), sources.cache_dir())

    def compute(model, pairs, prompt_ids, settings):
        from harness.correctness.reference import tokenizer_sha256
        from harness.correctness.stored_reference import PromptReference, Reference

        with open(marker, "a") as out:  # one line per computation
            out.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # long enough for the others to arrive and wait
        prompts = [
            PromptReference(kind, text, list(ids), [1] * 300, [[1, 2]] * 300, [[-0.1, -2.5]] * 300)
            for (kind, text), ids in zip(pairs, prompt_ids)
        ]
        return Reference(
            model={"name": model.name, "checksum": model.checksum, "tokenizer_sha256": tokenizer_sha256(model.hf_dir)},
            settings={},
            versions={},
            noise_floor={"kl_mean": 0.0},
            prompts=prompts,
        )

    store = ReferenceStore(Path(root), compute=compute)
    pairs = [("plain", "The river"), ("plain", "A bakery on the corner")]
    seen = []
    for _ in range(3):
        reference, path, _reused = store.get_or_compute(model, pairs, ReferenceSettings(tokens=4))
        seen.append(len(reference.prompts[0].tokens))
        json.loads(Path(path).read_text())  # never a partial file
    for round_ in range(20):
        record_store.write(synthetic_records.record("hf-cpu-bf16", seed=round_ + index), results_dir)
        record_store.read(Path(results_dir) / "demo" / "hf-cpu-bf16.json")
    return seen


def test_concurrent_runners_compute_a_reference_once_and_never_read_half_a_file(tmp_path, tiny_llama):
    import multiprocessing

    marker = tmp_path / "computed.txt"
    jobs = [(str(tmp_path / "refs"), str(marker), str(tmp_path / "results"), i) for i in range(6)]
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        seen = pool.map(_store_worker, jobs)
    assert seen == [[300, 300, 300]] * 6
    assert len(marker.read_text().splitlines()) == 1  # computed once; five runners waited and read it
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind
    assert record_store.read(tmp_path / "results" / "demo" / "hf-cpu-bf16.json").status == "ok"


def test_the_accuracy_reference_store_computes_once_under_concurrency(tmp_path, tiny_llama):
    pytest.importorskip("lm_eval")
    import threading

    from harness.accuracy import reference_scores as accuracy_reference

    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.3)
        return Evaluation({"harness_cloze": {"acc": 0.5, "items": 4}}, {})

    out = []
    threads = [
        threading.Thread(
            target=lambda: out.append(
                accuracy_reference.reference(
                    tiny_llama, ["harness_cloze"], 4, 0, "bf16", None, tmp_path, compute=compute
                )
            )
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and [found.scores for found in out] == [{"harness_cloze": {"acc": 0.5, "items": 4}}] * 4


# -- 6. sizes and identity ----------------------------------------------------------------------------


def test_a_sweep_of_millions_of_points_is_refused_in_under_a_second(write_scenario, capsys):
    axis = "[" + ", ".join(str(n) for n in range(1, 101)) + "]"
    path = write_scenario(
        f"""
        model: tiny-llama
        sweep:
          adapter: [hf]
          batch_size: {axis}
          beam_width: {axis}
          prompt_len: {axis}
        """,
        "huge.yaml",
    )
    refused_in_one_line(["check", str(path)], capsys)  # untimed: the first call in a process pays its imports
    # CPU time, not wall time: a loaded machine (other tests, other jobs) stretches the wall clock, never
    # this process's CPU seconds; expanding the million points would cost many of them.
    start = time.process_time()
    line = refused_in_one_line(["check", str(path)], capsys)
    assert time.process_time() - start < 1.0
    assert (
        f"{path}:2: sweep: the sweep expands to 1,000,000 points (100 prompt_len x 100 beam_width x 100 batch_size)"
        in line
    )
    assert "--max-points" in line


def test_max_points_raises_the_limit(write_scenario, capsys):
    path = write_scenario(
        """
        model: tiny-llama
        sweep: {adapter: [hf], batch_size: [1, 2, 3]}
        """,
        "three.yaml",
    )
    assert "more than the limit of 2" in refused_in_one_line(["check", str(path), "--max-points", "2"], capsys)
    assert cli.main(["check", str(path), "--max-points", "3"]) == 0


def test_pytest_harness_max_points_raises_the_limit(pytester, fake_adapters):
    three = tiny(prompts=["x"], generation={"max_new_tokens": 2}, sweep={"adapter": ["fake"], "batch_size": [1, 2, 3]})
    pytester.makefile(".yaml", **{"scenarios/three": three})
    options = ("--harness-isolation", "none", "--harness-no-energy", "-p", "no:cacheprovider")
    refused = pytester.runpytest("scenarios/", "--harness-max-points", "2", *options)
    assert refused.ret != pytest.ExitCode.OK
    refused.stdout.fnmatch_lines(["*more than the limit of 2*"])
    pytester.runpytest("scenarios/", "--harness-max-points", "3", *options).assert_outcomes(passed=3)


@pytest.mark.parametrize(
    "field, text",
    [
        ("generation.max_new_tokens", "generation: {max_new_tokens: 99999999999999}"),
        ("gate.tokens", "gate: {tokens: 5000000}"),
        ("sweep.prompt_len.0", "sweep: {adapter: [hf], prompt_len: [123456789012]}"),
    ],
)
def test_astronomic_token_counts_are_refused_by_the_schema(field, text, write_scenario, capsys):
    body = "model: tiny-llama\n" + text + ("\n" if "sweep" in text else "\nsweep: {adapter: [hf]}\n")
    path = write_scenario(body, "tokens.yaml")
    line = refused_in_one_line(["check", str(path)], capsys)
    assert f"{path}:2: {field}: input should be less than or equal to 1048576" in line


def test_tokens_beyond_the_model_context_skip_the_point_with_the_reason(write_scenario, tmp_path, fake_adapters):
    loaded = planning.load(
        write_scenario(tiny(prompts=["x"], generation={"max_new_tokens": 9000}, measurement=None), "long.yaml")
    )
    [record] = Runner(RunSettings(results_dir=tmp_path / "results", energy=False)).run([loaded], progress=False)
    assert record.status == "skipped"
    assert not record.samples.rounds and not record.samples.warmup_s  # refused before anything was generated
    assert record.reason == (
        "prompt (0 tokens) + max_new_tokens (9000) exceeds the model's context of 8192 tokens "
        "(max_position_embeddings in its config.json)"
    )


def test_oversized_adapter_options_are_refused(write_scenario, capsys):
    blob = "x" * 70_000
    path = write_scenario(
        f"model: tiny-llama\nadapter_options: {{hf: {{blob: {blob}}}}}\nsweep: {{adapter: [hf]}}\n", "opts.yaml"
    )
    line = refused_in_one_line(["check", str(path)], capsys)
    assert f"{path}:2: adapter_options:" in line and "at most 64 KiB" in line


def test_two_scenarios_with_one_name_in_one_run_are_refused_naming_both(tmp_path, capsys, fake_adapters):
    first, second = tmp_path / "a" / "nightly.yaml", tmp_path / "b" / "nightly.yaml"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(FAKE_SCENARIO)
    line = refused_in_one_line(
        ["run", str(first), str(second), "--results", str(tmp_path / "r"), "--no-progress"], capsys
    )
    assert str(second) in line and str(first.resolve()) in line and "same place" in line
    assert not (tmp_path / "r").exists()
    renamed = second.read_text() + "name: other\n"
    second.write_text(renamed)
    assert cli.main(["check", str(first), str(second)]) == 0


def test_pytest_refuses_two_scenario_files_with_one_name(pytester, fake_adapters):
    text = FAKE_SCENARIO
    pytester.makefile(".yaml", **{"scenarios/a/nightly": text, "scenarios/b/nightly": text})
    result = pytester.runpytest("scenarios/", "--collect-only", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*scenario name 'nightly' is also the name of *nightly.yaml*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED
