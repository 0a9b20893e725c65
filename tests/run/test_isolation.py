"""Sweeps survive crashes, hangs, memory blow-ups and interruption; records are never lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from harness.records import store
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import Limits, RunSettings
from harness.scenario.sweep import expand
from tests.tiny_scenario import tiny

FAULTY_SWEEP = tiny(
    generation={"max_new_tokens": 6},
    measurement={"min_rounds": 2},
    sweep={"adapter": ["fake-segfault", "fake", "fake-hang", "fake-failing", "fake-hungry", "fake-truncating"]},
)


def test_a_sweep_of_misbehaving_engines_completes_with_every_failure_recorded(write_scenario, tmp_path, fake_adapters):
    loaded = planning.load(write_scenario(FAULTY_SWEEP))
    runner = Runner(
        RunSettings(results_dir=tmp_path, isolation="worker", limits=Limits(timeout_s=6, memory_limit_mb=1024))
    )
    records = {r.point["adapter"]: r for r in runner.run([loaded], progress=False)}

    assert records["fake"].status == "ok" and records["fake"].metrics["generated_tokens"] == 6
    segfault = records["fake-segfault"]
    assert segfault.status == "failed" and "killed by SIGSEGV (signal 11)" in segfault.reason
    assert segfault.failure.exit_code == -signal.SIGSEGV
    hang = records["fake-hang"]
    assert hang.status == "timeout" and hang.reason == "no result within 6 s; the process was killed"
    assert records["fake-failing"].reason == "RuntimeError: fake engine fault at step 3"
    hungry = records["fake-hungry"]
    assert hungry.status == "failed" and ("MemoryError" in hungry.reason or "memory limit" in hungry.reason)
    assert "generated 2 tokens, 6 were asked for" in records["fake-truncating"].reason
    on_disk = store.load(tmp_path)
    assert sorted(on_disk.status) == ["failed"] * 4 + ["ok", "timeout"]
    assert all(r.environment.get("python") for r in records.values())  # parent-written records too


def test_resume_keeps_finished_points_and_runs_the_rest(write_scenario, tmp_path, fake_adapters):
    loaded = planning.load(write_scenario(tiny(sweep={"adapter": ["fake", "fake-failing"], "batch_size": [1, 2, 3]})))
    runner = Runner(RunSettings(results_dir=tmp_path))
    first = runner.run([loaded], progress=False, select=lambda s, p: p.batch_size == 1)  # "interrupted" here
    stamps = {r.point_id: r.started_at for r in first}
    time.sleep(1.1)  # started_at has one-second resolution
    resumed = Runner(RunSettings(results_dir=tmp_path)).run([loaded], progress=False, resume=True)
    assert len(resumed) == 6
    by_id = {r.point_id: r for r in resumed}
    assert by_id["fake-cpu-bf16-bs1"].started_at == stamps["fake-cpu-bf16-bs1"]  # kept, not re-run
    assert by_id["fake-failing-cpu-bf16-bs1"].started_at != stamps["fake-failing-cpu-bf16-bs1"]  # failed: re-run
    assert set(store.load(tmp_path).point_id) == set(by_id)

    changed = planning.load(write_scenario(tiny(generation={"max_new_tokens": 5}, sweep={"batch_size": [1]})))
    (point,) = expand(changed)
    assert Runner(RunSettings(results_dir=tmp_path)).finished(changed, point) is None  # settings differ: re-run


def test_killing_harness_run_mid_sweep_then_resuming_gives_every_record(write_scenario, tmp_path, tiny_llama):
    path = write_scenario(
        tiny(prompts=None, measurement={"threads": 1}, sweep={"adapter": ["hf"], "prompt_len": [8, 12, 16, 20]})
    )
    out = tmp_path / "results"
    command = [sys.executable, "-m", "harness.cli", "run", str(path), "--results", str(out), "--no-progress"]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not list(out.glob("scenario/*.json")):  # kill after the first record
        time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait()
    before = {p.name: p.read_bytes() for p in (out / "scenario").glob("*.json")}
    assert 1 <= len(before) < 4
    assert not list((out / "scenario").glob(".*"))  # no partial file left by the kill
    subprocess.run(command + ["--resume"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = {p.name: p.read_bytes() for p in (out / "scenario").glob("*.json")}
    assert len(after) == 4
    assert all(after[name] == content for name, content in before.items())  # finished records untouched


def _write_many(args):
    directory, worker = args
    from tests.record.test_store import make_record

    for i in range(40):
        store.write(make_record(point_id=f"w{worker}-{i}"), directory)
        store.write(make_record(point_id="shared", metrics={"worker": worker, "i": i}), directory)


def test_concurrent_writers_lose_nothing(tmp_path):
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write_many, [(tmp_path, 0), (tmp_path, 1)]))
    files = list((tmp_path / "demo").iterdir())
    assert len(files) == 81 and not [f for f in files if f.name.startswith(".")]
    assert json.loads((tmp_path / "demo" / "shared.json").read_text())["metrics"]["i"] == 39
    assert len(store.load(tmp_path)) == 81
    assert os.path.exists(tmp_path / "demo" / "w1-39.json")


def test_an_isolated_point_relays_its_phase_to_the_parent(write_scenario, tmp_path, fake_adapters):
    # The timed rounds last at least 2 s (min_time_s), so the parent's twice-a-second poll sees them.
    loaded = planning.load(
        write_scenario(
            tiny(generation={"max_new_tokens": 6}, measurement={"warmup_rounds": 1, "min_rounds": 2, "min_time_s": 2})
        )
    )
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="worker", energy=False))
    phases: list[str] = []
    [point] = expand(loaded)
    assert runner.run_point(loaded, point, on_phase=phases.append).status == "ok"
    assert any("timing round" in phase for phase in phases), phases
    assert all(phase.startswith(point.id) for phase in phases)


def test_the_phase_relay_passes_on_changes_only(tmp_path):
    from harness.run.launchers.worker_process import PhaseRelay

    seen: list[str] = []
    relay = PhaseRelay(tmp_path / "phase", seen.append)
    relay.poll()  # no file yet: nothing
    (tmp_path / "phase").write_text("loading")
    relay.poll()
    relay.poll()
    (tmp_path / "phase").write_text("timing round 1/3")
    relay.poll()
    assert seen == ["loading", "timing round 1/3"]


# `harness` with the fake engines registered, as a user's process: a `--timeout` that were ignored would leave
# the hanging point to the subprocess's own time limit, not hang the suite.
HARNESS_WITH_FAKES = """import sys
from harness.adapters import registry
from tests.fakes import ALL
for adapter in ALL:
    registry.register_adapter(adapter)
from harness.cli.app import main
sys.exit(main(sys.argv[1:]))"""


def test_timeout_on_the_command_line_ends_a_hanging_point_and_defaults_to_an_hour(
    write_scenario, tmp_path, fake_adapters, monkeypatch
):
    from harness import cli

    hanging = write_scenario(tiny(generation={"max_new_tokens": 2}, sweep={"adapter": ["fake-hang"]}))
    argv = ["run", str(hanging), "--results", str(tmp_path / "r"), "--timeout", "2", "--no-progress", "--no-energy"]
    done = subprocess.run(
        [sys.executable, "-c", HARNESS_WITH_FAKES, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    (record,) = [r for _, r in store.iter_records(tmp_path / "r")]
    assert record.status == "timeout" and record.reason == "no result within 2 s; the process was killed"
    limits = []  # and without the option: an hour per point
    built = Runner.__init__
    monkeypatch.setattr(
        Runner, "__init__", lambda self, settings, **kw: limits.append(settings.limits) or built(self, settings, **kw)
    )
    healthy = write_scenario(tiny(generation={"max_new_tokens": 2}, sweep={"adapter": ["fake"]}), "healthy.yaml")
    assert cli.main(["run", str(healthy), "--results", str(tmp_path / "d"), "--isolation", "none", "--no-energy"]) == 0
    assert [limit.timeout_s for limit in limits] == [3600.0]
