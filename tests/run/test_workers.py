"""Persistent isolated workers: a worker serves a group of points, a failing point's worker is replaced,
engines are reused only where the adapter says so and reuse measures what a fresh load measures, and every
record says where its wall time went."""

from __future__ import annotations

import signal

import pytest

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import Limits, RunSettings
from tests.conftest import registered
from tests.tiny_scenario import tiny


@pytest.fixture
def worker_adapters(fake_adapters):
    from tests.fakes import WORKERS

    yield from registered(WORKERS)


def test_thirty_points_with_a_crash_a_hang_and_a_memory_blowup(write_scenario, tmp_path, worker_adapters):
    loaded = planning.load(write_scenario(tiny(sweep={"adapter": ["fake-picky"], "batch_size": list(range(1, 31))})))
    runner = Runner(
        RunSettings(
            results_dir=tmp_path, isolation="worker", energy=False, limits=Limits(timeout_s=5, memory_limit_mb=1024)
        )
    )
    records = {r.point["batch_size"]: r for r in runner.run([loaded], progress=False)}

    assert len(records) == 30
    healthy = {bs: r for bs, r in records.items() if bs not in (7, 13, 21)}
    assert all(r.status == "ok" and r.metrics["generated_tokens"] == 4 for r in healthy.values()), {
        bs: r.reason for bs, r in healthy.items() if r.status != "ok"
    }
    crash, hang, hungry = records[7], records[13], records[21]
    assert crash.status == "failed" and "killed by SIGSEGV" in crash.reason
    assert crash.failure.signal == "SIGSEGV" and crash.failure.exit_code == -signal.SIGSEGV
    assert hang.status == "timeout" and hang.reason == "no result within 5 s; the process was killed"
    assert hungry.status == "failed" and ("MemoryError" in hungry.reason or "memory limit" in hungry.reason)
    # One worker for the group, replaced after each of the three failures: not a process per point.
    assert runner.launcher.started == 4
    # Healthy points after a failure ran in the replacement worker: their records say so by their time split.
    assert healthy[8].time_split.process_start_s > 0 and healthy[9].time_split.process_start_s == 0


def test_point_isolation_starts_a_process_per_point(write_scenario, tmp_path, worker_adapters):
    loaded = planning.load(write_scenario(tiny(generation={"max_new_tokens": 3}, sweep={"batch_size": [1, 2, 3]})))
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="point", energy=False))
    records = runner.run([loaded], progress=False)
    assert [r.status for r in records] == ["ok"] * 3
    assert runner.launcher.started == 3
    assert all(r.time_split.process_start_s > 0 and r.time_split.imports_s > 0 for r in records)


SWEEP = tiny(
    prompts=None,
    generation={"max_new_tokens": 5},
    measurement={"warmup_rounds": 2, "min_rounds": 2},
    sweep={"adapter": ["fake-reusable", "fake"], "prompt_len": [8, 12, 16]},
)


@pytest.fixture(scope="module")
def sweep_in_a_worker(tmp_path_factory, tiny_llama):
    """SWEEP's records from one run in a persistent worker, made once: the reuse test compares them with fresh
    loads, the time-split test reads where their wall time went."""
    from harness.adapters import registry
    from harness.measure import calibration_store
    from tests.fakes import ALL, WORKERS

    root = tmp_path_factory.mktemp("sweep-in-a-worker")
    path = root / "scenario.yaml"
    path.write_text(SWEEP)
    classes = (*ALL, *WORKERS)
    with pytest.MonkeyPatch.context() as patch:  # its own canary calibration, as each test has (conftest.py)
        patch.setattr(calibration_store, "path", lambda cache_dir=None: root / "calibration.json")
        for cls in classes:  # for this run only: the tests register their own
            registry.register_adapter(cls)
        try:
            runner = Runner(RunSettings(results_dir=root / "results", isolation="worker", energy=False))
            return runner.run([planning.load(path)], progress=False)
        finally:
            for cls in classes:
                registry.unregister_adapter(cls.name)


def test_a_worker_reuses_an_engine_only_where_the_adapter_says_so(
    write_scenario, tmp_path, sweep_in_a_worker, worker_adapters
):
    loaded = planning.load(write_scenario(SWEEP))
    reused = {r.point_id: r for r in sweep_in_a_worker}
    fresh = {
        r.point_id: r
        for r in Runner(RunSettings(results_dir=tmp_path / "point", isolation="point", energy=False)).run(
            [loaded], progress=False
        )
    }
    assert all(r.status == "ok" for r in [*reused.values(), *fresh.values()])
    loads = {pid: r.engine.extra["load"] for pid, r in reused.items() if r.point["adapter"] == "fake-reusable"}
    assert len(set(loads.values())) == 1, loads  # one load served the three prompt lengths
    reused_points = [r for r in reused.values() if "load_s" in r.unavailable]
    assert len(reused_points) == 2 and all("engine reused" in r.unavailable["load_s"] for r in reused_points)
    assert all(r.metrics.get("load_s") is not None for r in reused.values() if r.point["adapter"] == "fake")
    order = [pid for pid, r in reused.items() if r.point["adapter"] == "fake-reusable"]  # the group, in order
    for pid, record in reused.items():  # reuse measures what a fresh load measures
        twin = fresh[pid]
        assert record.outputs == twin.outputs
        assert len(record.samples.warmup_s) == len(twin.samples.warmup_s) == 2  # as many warm-up rounds
        assert twin.samples.warmup_tokens == [5, 5]  # a fresh engine warms up at the timed rounds' length
        if "load_s" in record.unavailable:  # a kept engine: each warm-up its prefill and a decode step
            assert record.samples.warmup_tokens == [2, 2]
            loader = order[0]  # the group's first point loaded the engine (not the point just before)
            assert record.unavailable["load_s"].startswith(f"engine reused: loaded once for {loader},")
            assert record.metrics["first_call_s"] is None
            assert record.unavailable["first_call_s"] == f"engine reused: its first call was {loader}'s"
        else:
            assert record.samples.warmup_tokens == [5, 5] and record.metrics["first_call_s"] > 0
        assert len(record.samples.rounds) == len(twin.samples.rounds)
        assert record.metrics["generated_tokens"] == twin.metrics["generated_tokens"]
    later = [r for r in reused.values() if r.point["adapter"] == "fake-reusable" and "load_s" in r.unavailable]
    assert all(r.engine.extra["calls"] > 4 for r in later)  # the kept engine had served the earlier point's calls


def test_records_say_where_wall_time_went(sweep_in_a_worker):
    records = sweep_in_a_worker
    first, *rest = [r for r in records if r.point["adapter"] == "fake-reusable"]
    split = first.time_split
    assert split.process_start_s > 0 and split.imports_s > 0  # the group's first point started the worker
    assert split.timed_s == pytest.approx(sum(r.e2e_s for r in first.samples.rounds))
    assert split.warmup_s == pytest.approx(sum(first.samples.warmup_s))
    assert all(r.time_split.process_start_s == 0 and r.time_split.imports_s == 0 for r in rest)
    # the canary's edges, from the worker's own canary child, and the tokenizer + prompts: named, not "other"
    assert all(r.time_split.canary_s > 0 and r.time_split.resolve_s > 0 for r in records)
    assert all(value >= 0 for r in records for value in r.time_split.model_dump().values())


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/clear_refs"), reason="needs Linux's clear_refs")
def test_peak_memory_is_per_point_in_a_persistent_worker(write_scenario, tmp_path, worker_adapters):
    loaded = planning.load(
        write_scenario(tiny(generation={"max_new_tokens": 3}, sweep={"adapter": ["fake-bulky"], "batch_size": [1, 2]}))
    )
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="worker", energy=False))
    bulky, lean = runner.run([loaded], progress=False)
    assert runner.launcher.started == 1  # both points in one worker
    # The second point never held the first one's 300 MB: its peak starts at its own start.
    assert bulky.metrics["peak_rss_mb"] - lean.metrics["peak_rss_mb"] > 200
    # The device's peak too (CUDA keeps one per process): reset when each point starts.
    assert (bulky.metrics["device_memory_peak_mb"], lean.metrics["device_memory_peak_mb"]) == (300.0, 0.0)


def test_a_recalibration_mid_run_keeps_the_worker_and_reaches_it(
    write_scenario, tmp_path, worker_adapters, monkeypatch
):
    """A launch whose canary beat the calibration at both edges recalibrates; the kept worker (and its loaded
    engine) stays, and the next point's record carries the new calibration."""
    from harness.measure import canary

    disturbed = []

    def first_launch_disturbed(launch, calibration):
        if launch is None or disturbed:
            return None
        disturbed.append(launch.point_id)
        return "a launch's canary beat the calibration at both edges"

    monkeypatch.setattr(canary, "disturbed_by", first_launch_disturbed)
    loaded = planning.load(write_scenario(tiny(generation={"max_new_tokens": 3}, sweep={"batch_size": [1, 2]})))
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="worker", energy=False))
    first, second = runner.run([loaded], progress=False)
    assert disturbed == [first.point_id] and runner.recalibrations == 1
    assert runner.launcher.started == 1  # the worker was kept through the recalibration
    assert first.environment["canary"] != second.environment["canary"]
    assert second.environment["canary"] == runner.caches.canary.model_dump()


@pytest.mark.parametrize("target, launches", [(10.0, 2), (1e-9, 4)])
def test_adaptive_launches_stop_when_the_interval_is_narrow_enough(
    write_scenario, tmp_path, worker_adapters, target, launches
):
    loaded = planning.load(
        write_scenario(
            tiny(
                measurement={"min_rounds": 2, "launches": 2, "target_rel_ci": target, "max_launches": 4},
                sweep={"batch_size": [1, 2]},
            )
        )
    )
    records = Runner(RunSettings(results_dir=tmp_path, isolation="none", energy=False)).run([loaded], progress=False)
    # A +-1000 % target is met by the first interval; an impossible one runs to max_launches.
    assert [len(r.samples.launches) for r in records] == [launches, launches]
    assert all(r.samples.intervals["tpot_ms"].launches == launches for r in records)


def test_launches_are_interleaved_across_the_sweep(write_scenario, tmp_path, worker_adapters):
    loaded = planning.load(
        write_scenario(
            tiny(generation={"max_new_tokens": 3}, measurement={"launches": 3}, sweep={"batch_size": [1, 2]})
        )
    )
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="none", energy=False))
    phases: list[str] = []
    records = runner.run([loaded], progress=False, on_phase=phases.append)
    loads = [phase.split(":")[0] for phase in phases if "loading" in phase]
    # Round-robin: launch k of every point before launch k+1 of any.
    assert loads == ["fake-cpu-bf16-bs1", "fake-cpu-bf16-bs2"] * 3
    assert all(r.status == "ok" and len(r.samples.launches) == 3 for r in records)


def test_a_lost_workers_record_starts_as_every_record_does(write_scenario, tmp_path, worker_adapters):
    """The parent builds a crashed worker's record with the function every record starts from
    (``steps.new_record``): the same settings, environment, scenario file and times as any record."""
    from harness.run.steps.new_record import scenario_settings

    loaded = planning.load(
        write_scenario("""
        model: tiny-llama
        prompts: ["The river"]
        generation: {max_new_tokens: 2}
        measurement: {warmup_rounds: 0, min_rounds: 1}
        sweep:
          adapter: [fake-picky]
          batch_size: [7]
        """)
    )
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="worker", energy=False, limits=Limits(timeout_s=60)))
    [crash] = runner.run([loaded], progress=False)
    assert crash.status == "failed" and crash.failure.signal == "SIGSEGV"
    assert crash.settings == scenario_settings(loaded) and crash.settings["generation"]["max_new_tokens"] == 2
    assert crash.environment == runner.caches.environment() and crash.environment["python"]
    assert crash.scenario_path == loaded.source_file and crash.point["batch_size"] == 7
    assert crash.started_at and crash.finished_at and crash.started_at <= crash.finished_at


def test_a_worker_is_started_with_the_run_settings_whole():
    """The run's settings cross to a worker as one frozen object (pickled), not a dict of some of them."""
    import dataclasses
    import pickle

    from harness.run.launchers.worker_serve import WorkerSetup

    settings = RunSettings(
        results_dir=None, correctness_only=True, gate_prompts=3, energy=False, limits=Limits(5, 2048), launches=2
    )
    setup = WorkerSetup.of(settings, None, "fake", keep_engines=True)
    received = pickle.loads(pickle.dumps(setup))
    assert received == setup and received.settings == settings and received.settings.limits.memory_limit_mb == 2048
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.energy = True  # type: ignore[misc]


def living(groups: list[int], wait_s: float = 5.0) -> list[str]:
    """Processes of these process groups still alive (not zombies: a killed reaper waits for init to reap it),
    after up to ``wait_s`` seconds for SIGKILL to land."""
    import time
    from pathlib import Path

    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            if fields[0] != "Z" and int(fields[2]) in groups:  # state, then ppid, then the process group
                found.append(f"{stat.parent.name} ({fields[0]})")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_the_next_groups_worker_starts_beside_this_ones_and_is_ready_before_any_point_runs(
    write_scenario, tmp_path, worker_adapters, monkeypatch
):
    from datetime import datetime

    imported = tmp_path / "imported"  # when the second group's engine import finished (wall clock)
    monkeypatch.setenv("HARNESS_TEST_ENGINE_IMPORT", f"sleep:1.5:{imported}")
    loaded = planning.load(
        write_scenario(tiny(generation={"max_new_tokens": 3}, sweep={"adapter": ["fake", "fake-slow-import"]}))
    )
    from harness.run.launchers.worker_process import WorkerProcess

    groups: list[int] = []  # every worker's process group (its leader's pid)
    real_start = WorkerProcess.start

    def start(self, first=None):
        real_start(self, first)
        groups.append(self.process.pid)

    monkeypatch.setattr(WorkerProcess, "start", start)
    phases: list[str] = []
    runner = Runner(RunSettings(results_dir=tmp_path / "results", isolation="worker", energy=False))
    first, second = runner.run([loaded], progress=False, on_phase=phases.append)
    assert (first.point["adapter"], first.status, second.point["adapter"], second.status) == (
        "fake",
        "ok",
        "fake-slow-import",
        "ok",
    ), (first.reason, second.reason)
    assert runner.launcher.started == 2  # one worker per group, the second started early, not twice
    # Its 1.5 s import ended before the first group's point began: nothing measured overlapped it.
    assert float(imported.read_text()) <= datetime.fromisoformat(first.started_at).timestamp()
    assert (
        f"{first.point_id}: starting its worker, and the fake-slow-import worker of the next group beside it" in phases
    )
    # The sweep waited for both starts, at least the 1.5 s import, and the two records hold that wait between
    # them: the first its own start, the second only what its start added.
    waited = sum(r.time_split.process_start_s + r.time_split.imports_s for r in (first, second))
    assert waited >= 1.5, (first.time_split, second.time_split)
    assert first.time_split.other_s > 0  # the job's hand-over, though its start came before the job was sent
    assert len(groups) == 2 and not living(groups)  # nothing the sweep started outlives it


def test_a_next_groups_worker_that_dies_while_starting_fails_only_its_own_points(
    write_scenario, tmp_path, worker_adapters, monkeypatch
):
    monkeypatch.setenv("HARNESS_TEST_ENGINE_IMPORT", "abort")  # every fake-slow-import worker dies importing
    loaded = planning.load(
        write_scenario(
            tiny(
                generation={"max_new_tokens": 3}, sweep={"adapter": ["fake", "fake-slow-import"], "batch_size": [1, 2]}
            )
        )
    )
    runner = Runner(RunSettings(results_dir=tmp_path / "results", isolation="worker", energy=False))
    records = runner.run([loaded], progress=False)
    by_adapter = {}
    for record in records:
        by_adapter.setdefault(record.point["adapter"], []).append(record)
    assert [r.status for r in by_adapter["fake"]] == ["ok", "ok"]
    dead = by_adapter["fake-slow-import"]
    assert [r.status for r in dead] == ["failed", "failed"]
    assert all("killed by SIGABRT" in r.reason for r in dead), [r.reason for r in dead]


def test_a_next_groups_worker_whose_group_never_comes_ends_with_the_sweep(
    write_scenario, tmp_path, worker_adapters, monkeypatch
):
    from harness.run.budget import parse_budget
    from harness.run.launchers.worker_process import WorkerProcess

    monkeypatch.setenv("HARNESS_TEST_ENGINE_IMPORT", f"sleep:0.2:{tmp_path / 'imported'}")
    groups: list[int] = []
    real_start = WorkerProcess.start

    def start(self, first=None):
        real_start(self, first)
        groups.append(self.process.pid)

    monkeypatch.setattr(WorkerProcess, "start", start)
    scenario = tiny(
        generation={"max_new_tokens": 3},
        measurement={"min_time_s": 1.2},  # the first point outlasts the budget: the second group never starts
        sweep={"adapter": ["fake", "fake-slow-import"]},
    )
    settings = RunSettings(
        results_dir=tmp_path / "results", isolation="worker", energy=False, budget=parse_budget("1s")
    )
    first, second = Runner(settings).run([planning.load(write_scenario(scenario))], progress=False)
    assert (first.status, second.status) == ("ok", "skipped") and "budget 1s spent" in second.reason
    assert len(groups) == 2  # the second group's worker had started beside the first's
    assert not living(groups)  # and ended with the sweep, though no point of its group ran
