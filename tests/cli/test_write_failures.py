"""Write failures of every output command, through the `harness` command the user types: a file system
that refuses a write mid-command (the process's file-size limit, RLIMIT_FSIZE, which the kernel enforces
on every write, for root too: "File too large", as a full disk would say "No space left on device") ends
in one line naming the path and the OS error, what is on disk, exit 2, no traceback and no temporary
file left. Then the checks made before a sweep: room for its records, a writable lock, and the lock a
pytest run takes as `harness run` does."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import cli
from harness.records import store
from tests.records import record
from tests.tiny_scenario import tiny

TOO_LARGE = "File too large"


def harness(*args, limit: int | None = None, cwd=None) -> subprocess.CompletedProcess:
    """``harness ARGS`` in a subprocess whose files cannot grow past ``limit`` bytes (CPython ignores
    SIGXFSZ, so a write past it fails with EFBIG instead of killing the process)."""

    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, preexec_fn=cap)


def one_error_line(done: subprocess.CompletedProcess, *needles: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, done.stderr
    assert all(needle in errors[0] for needle in needles), errors[0]
    return errors[0]


def no_temporary_files(*places: Path) -> None:
    left = [p for place in places if place.exists() for p in place.rglob("*.tmp")]
    assert not left, left


@pytest.fixture
def results(tmp_path) -> Path:
    out = tmp_path / "results"
    store.write(record("hf-cpu-bf16", seed=1), out)
    store.write(record("hf-cpu-bf16-seq256", seed=2, max_seq_len=256), out)
    return out


def test_report_that_cannot_be_written_is_one_line_naming_the_file(results, tmp_path):
    out = tmp_path / "report"
    line = one_error_line(harness("report", results, "-o", out, limit=2048), TOO_LARGE, "is incomplete")
    written = re.search(r"cannot write (\S+): " + TOO_LARGE, line)
    assert written and Path(written.group(1)).parent in (out, out / "plots"), line  # the file, not the folder
    no_temporary_files(out)


def test_merge_that_cannot_be_written_says_how_many_points_were_merged(results, tmp_path):
    out = tmp_path / "merged"
    store.write(record("hf-cpu-bf16-small", status="skipped"), tmp_path / "small")  # fits under the limit
    sizes = sorted(p.stat().st_size for p in [*results.rglob("*.json"), *(tmp_path / "small").rglob("*.json")])
    done = harness("merge", tmp_path / "small", results, "-o", out, limit=sizes[0] + 1)  # small first
    line = one_error_line(done, TOO_LARGE)
    merged = int(re.search(r"; (\d) of 3 point\(s\) merged into ", line).group(1))
    assert merged == len(list(out.rglob("*.json"))) == 1  # what the line says is what is on disk
    assert str(out / "demo") in line  # the record's path
    no_temporary_files(out)


def test_baseline_save_that_cannot_be_written_saves_nothing_and_keeps_the_old_one(results, tmp_path):
    baselines = tmp_path / "baselines"
    assert harness("baseline", "save", results, "--name", "b", "--baselines-dir", baselines).returncode == 0
    before = sorted(p.relative_to(baselines) for p in baselines.rglob("*"))
    done = harness("baseline", "save", results, "--name", "b", "--replace", "--baselines-dir", baselines, limit=2048)
    one_error_line(done, f"cannot write {baselines}", TOO_LARGE, "baseline 'b' not saved; its previous version is")
    assert sorted(p.relative_to(baselines) for p in baselines.rglob("*")) == before  # no staging folder left
    done = harness("baseline", "save", results, "--name", "c", "--baselines-dir", baselines, limit=2048)
    one_error_line(done, TOO_LARGE, "baseline 'c' not saved")
    assert not (baselines / "c").exists()


def test_export_that_cannot_be_written_leaves_the_previous_file_whole(results, tmp_path):
    out = tmp_path / "rows.jsonl"
    out.write_text("the previous export\n")
    done = harness("export", results, "--format", "jsonl", "-o", out, limit=2048)
    one_error_line(done, f"cannot write {out}: {TOO_LARGE}; nothing exported")
    assert out.read_text() == "the previous export\n"
    no_temporary_files(tmp_path)


def test_compare_csv_that_cannot_be_written_is_one_line(results, tmp_path):
    csv = tmp_path / "table.csv"
    done = harness("compare", results, results, "--csv", csv, "--baselines-dir", tmp_path / "b", limit=64)
    one_error_line(done, f"cannot write {csv}: {TOO_LARGE}")
    assert "speedup" in done.stdout or "hf-cpu-bf16" in done.stdout  # the table itself still printed


@pytest.fixture
def history_db(results, tmp_path) -> tuple[str, Path]:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("alembic")
    db = tmp_path / "h.sqlite"
    url = f"sqlite:///{db}"
    assert harness("history", "add", results, "--db", url).returncode == 0
    return url, db


def test_history_export_that_cannot_be_written_is_one_line(history_db, tmp_path):
    url, _ = history_db
    out = tmp_path / "values.parquet"
    pytest.importorskip("pyarrow")
    one_error_line(harness("history", "export", "--db", url, "-o", out, limit=1024), f"cannot write {out}: {TOO_LARGE}")
    assert not out.exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")  # a file where the export's folder goes: the OS's own words, one line
    one_error_line(harness("history", "export", "--db", url, "-o", blocker / "v.csv"), str(blocker))


def test_history_add_that_cannot_grow_the_database_adds_nothing(history_db, tmp_path):
    url, db = history_db
    more = tmp_path / "more"
    for seed in range(3, 9):
        store.write(record(f"hf-cpu-bf16-{seed}", seed=seed), more)
    size = db.stat().st_size
    done = harness("history", "add", more, "--db", url, limit=size)
    one_error_line(done, f"cannot write {url}: ", f"run from {more} not added")  # in SQLite's words
    listed = harness("history", "list", "--db", url)
    assert listed.returncode == 0 and str(more) not in listed.stdout  # one transaction: nothing of it stored


# -- before a sweep: room, a writable lock, and the lock under pytest ----------------------------------

FAKE_SCENARIO = tiny(prompts=["x"], generation={"max_new_tokens": 2}, sweep={"max_seq_len": [32, 64, 128]})


def _no_point_may_run(monkeypatch):
    from harness.run import steps
    from harness.run.steps.caches import Caches

    monkeypatch.setattr(steps, "execute", lambda *a, **k: pytest.fail("a point ran"))
    # a refusal comes before the canary's calibration: its seconds and its busy-machine line are for a run
    monkeypatch.setattr(Caches, "calibrate_canary", lambda *a, **k: pytest.fail("the canary calibrated"))


def _disk_with(monkeypatch, free: int) -> None:
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=free))


def test_a_sweep_without_room_for_its_records_is_refused_before_any_point(
    write_scenario, tmp_path, fake_adapters, monkeypatch, capsys
):
    scenario = write_scenario(FAKE_SCENARIO)
    out = tmp_path / "r"
    _no_point_may_run(monkeypatch)
    _disk_with(monkeypatch, free=store.RECORD_BYTES * 3 - 1)  # three points, one byte short
    argv = ["run", str(scenario), "--results", str(out), "--isolation", "none", "--no-progress", "--no-energy"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"cannot write --results {out}: 1.5 MiB free, 3 point(s) need about 1.5 MiB" in err
    assert "none there to measure" in err and "nothing ran" in err


def test_the_estimate_is_the_mean_of_the_records_already_there(
    write_scenario, tmp_path, fake_adapters, monkeypatch, capsys
):
    scenario = write_scenario(FAKE_SCENARIO)
    out = tmp_path / "r"
    store.write(record("old", scenario="other"), out)
    argv = ["run", str(scenario), "--results", str(out), "--isolation", "none", "--no-progress", "--no-energy"]
    _disk_with(monkeypatch, free=3 * (out / "other" / "old.json").stat().st_size)  # room for three of those
    assert cli.main(argv) == 0, capsys.readouterr().err
    sizes = [p.stat().st_size for p in out.rglob("*.json") if "references" not in p.parts]
    assert len(sizes) == 4
    _no_point_may_run(monkeypatch)
    _disk_with(monkeypatch, free=3 * (sum(sizes) // 4) - 1)  # one byte short of three of the mean record
    assert cli.main(argv) == 2
    assert "the mean of the 4 record(s) there" in capsys.readouterr().err


def test_a_lock_that_cannot_be_created_is_one_line(write_scenario, tmp_path, fake_adapters, monkeypatch, capsys):
    scenario = write_scenario(FAKE_SCENARIO)
    out = tmp_path / "r"
    (out / ".harness-run.lock").mkdir(parents=True)  # the first write into the results directory fails
    _no_point_may_run(monkeypatch)
    argv = ["run", str(scenario), "--results", str(out), "--isolation", "none", "--no-progress", "--no-energy"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"cannot write {out / '.harness-run.lock'}: Is a directory" in err, err


REAL_SCENARIO = """
name: s
model: tiny-llama
prompts: ['The river']
generation: {max_new_tokens: 2}
measurement: {warmup_rounds: 0, min_rounds: 1, min_time_s: 60}
sweep: {adapter: [hf]}
"""

HOLD = """
import sys
from harness.io import results_lock
with results_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_pytest_is_refused_a_results_directory_a_harness_run_holds(pytester, tiny_llama):
    pytester.makefile(".yaml", **{"scenarios/s": REAL_SCENARIO})
    results = pytester.path / "r"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(results)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = pytester.runpytest_subprocess("scenarios/", "--harness-results", "r", "-p", "no:cacheprovider")
    finally:
        holder.communicate("", timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--harness-results r: another harness run (PID {holder.pid}) is writing there*"])
    assert not (results / "s").exists()  # no point ran


def test_harness_run_is_refused_a_results_directory_a_pytest_run_holds(pytester, tiny_llama):
    pytester.makefile(".yaml", **{"scenarios/s": REAL_SCENARIO})
    lock = pytester.path / "r" / ".harness-run.lock"
    command = [sys.executable, "-m", "pytest", "scenarios/", "--harness-results", "r", "-p", "no:cacheprovider"]
    session = subprocess.Popen(
        [*command, "--harness-isolation", "none", "--harness-no-energy"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1200):  # the session holds the directory once its points are collected
            if lock.exists() and lock.read_text().strip() == str(session.pid):
                break
            time.sleep(0.1)
        scenario = pytester.path / "scenarios" / "s.yaml"
        done = harness("run", scenario, "--results", "r", "--isolation", "none", "--no-progress", cwd=pytester.path)
        one_error_line(done, f"another harness run (PID {session.pid}) is writing there")
    finally:
        session.terminate()
        session.wait(timeout=60)


def test_pytest_without_room_for_its_records_is_refused_before_any_point(pytester, fake_adapters, monkeypatch):
    pytester.makefile(".yaml", **{"scenarios/s": FAKE_SCENARIO})
    _no_point_may_run(monkeypatch)
    _disk_with(monkeypatch, free=1024)
    result = pytester.runpytest("scenarios/", "--harness-results", "r", "-p", "no:cacheprovider")
    assert result.ret == 2, result.stdout.str()  # as `harness run` and the docs say (before: 4)
    result.stderr.fnmatch_lines(["ERROR: cannot write --harness-results r: 0.0 MiB free, 3 point(s) need about*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_sweep_whose_history_cannot_be_written_prints_its_table_and_the_command_to_add_it(
    write_scenario, tmp_path, fake_adapters, capsys
):
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("alembic")
    scenario = write_scenario(FAKE_SCENARIO)
    db = tmp_path / "h.sqlite"
    out = tmp_path / "r"
    argv = ["run", str(scenario), "--results", str(out), "--isolation", "none", "--no-progress", "--no-energy"]
    assert cli.main([*argv[:2], "--results", str(tmp_path / "first"), *argv[4:], "--history", f"sqlite:///{db}"]) == 0
    capsys.readouterr()
    biggest = max(p.stat().st_size for p in (tmp_path / "first").rglob("*.json"))
    assert db.stat().st_size > 4 * biggest
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 * biggest, limit[1]))  # records fit; the database's pages do not
    try:
        code = cli.main([*argv, "--history", f"sqlite:///{db}"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
    out_err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out_err.err, out_err.err
    assert "fake-cpu-bf16-seq128" in out_err.out  # the run table still printed
    (line,) = [line for line in out_err.err.splitlines() if line.startswith("ERROR")]
    assert f"cannot write sqlite:///{db}: " in line
    assert f"add them with: harness history add {out} --db sqlite:///{db}" in line
    assert len(list(out.rglob("*.json"))) >= 3  # the records are on disk
