"""Energy through the real Zeus code, driven by a fake RAPL powercap tree whose counters advance."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from harness import energy, roofline

UJ_PER_TICK = 2_000  # 2 mJ per millisecond: about 2 W


class FakeRapl:
    """intel-rapl:0 (package-0) with a dram subzone; a thread advances both counters every ms."""

    def __init__(self, root):
        self.package = root / "intel-rapl:0"
        self.dram = self.package / "intel-rapl:0:0"
        for zone, name in ((self.package, "package-0"), (self.dram, "dram")):
            zone.mkdir(parents=True)
            (zone / "name").write_text(name + "\n")
            (zone / "max_energy_range_uj").write_text("262143328850\n")
            (zone / "energy_uj").write_text("1000000\n")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self):
        value = 1_000_000
        while not self._stop.is_set():
            value += UJ_PER_TICK
            for zone, share in ((self.package, 1), (self.dram, 0.25)):
                tmp = zone / "energy_uj.tmp"
                tmp.write_text(f"{int(value * share)}\n")
                os.replace(tmp, zone / "energy_uj")
            time.sleep(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.fixture
def fake_rapl(tmp_path, monkeypatch):
    import zeus.device.cpu as zeus_cpu
    from zeus.device.cpu import rapl

    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "powercap" / "intel-rapl"))
    monkeypatch.setattr(zeus_cpu, "_cpus", None)  # Zeus caches the CPU set per process
    with FakeRapl(tmp_path / "powercap" / "intel-rapl") as tree:
        yield tree
    zeus_cpu._cpus = None


@pytest.fixture
def no_rapl(tmp_path, monkeypatch):
    import zeus.device.cpu as zeus_cpu
    from zeus.device.cpu import rapl

    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "absent"))
    monkeypatch.setattr(rapl, "CONTAINER_RAPL_DIR", str(tmp_path / "absent-too"))
    monkeypatch.setattr(zeus_cpu, "_cpus", None)
    yield
    zeus_cpu._cpus = None


def test_every_source_is_measured_or_null_with_a_reason(fake_rapl):
    meter = energy.EnergyMeter()
    meter.begin("w")
    time.sleep(0.3)
    window = meter.end("w")
    assert window.energy_j["cpu_package"] > 0.1 and window.energy_j["dram"] > 0.02
    assert window.energy_j["cpu_package"] > window.energy_j["dram"]
    assert window.energy_j["gpu"] is None and "no GPU" in meter.unavailable["gpu"]
    figures = energy.metrics(window, tokens=10, prefill=None, prompt_tokens=0)
    total = window.energy_j["cpu_package"] + window.energy_j["dram"]
    assert figures["energy_j"] == pytest.approx(total)
    assert figures["energy_per_token_mj"] == pytest.approx(total / 10 * 1e3)
    assert figures["avg_power_w"] == pytest.approx(total / window.wall_s)
    assert figures["prefill_energy_per_prompt_token_mj"] is None


def test_without_rapl_energy_is_null_never_zero(no_rapl):
    meter = energy.EnergyMeter()
    assert "no RAPL interface" in meter.unavailable["cpu_package"]
    meter.begin("w")
    sum(range(200_000))
    window = meter.end("w")
    figures = energy.metrics(window, tokens=5, prefill=None, prompt_tokens=0)
    assert figures["energy_j"] is None and figures["energy_per_token_mj"] is None
    assert figures["cpu_user_s"] + figures["cpu_system_s"] > 0


SCENARIO = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 8}
measurement: {warmup_rounds: 0, min_rounds: 3}
sweep:
  adapter: [fake]
  device: [cpu, npu]
"""


def test_energy_per_token_reaches_the_benchmark_json(pytester, fake_adapters, fake_rapl):
    path = pytester.path / "scenarios" / "energy.yaml"
    path.parent.mkdir()
    path.write_text(SCENARIO)
    result = pytester.runpytest("scenarios/", "--harness-isolation", "none", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1, skipped=1)
    (bench,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    info = bench["extra_info"]
    assert info["energy_cpu_package_j"] > 0 and info["energy_dram_j"] is not None and info["energy_gpu_j"] is None
    assert info["energy_per_token_mj"] > 0 and info["prefill_energy_per_prompt_token_mj"] > 0
    assert info["cpu_utilization"] is not None
    record = json.loads((pytester.path / "results" / "energy" / "fake-cpu-bf16.json").read_text())
    assert "no GPU" in record["details"]["energy_unavailable"]["gpu"]


def test_roofline_bound_from_bytes_and_bandwidth():
    config = {"num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": 16, "num_attention_heads": 4, "hidden_size": 64}
    assert roofline.kv_bytes_per_token(config) == 2 * 2 * 2 * 16 * 2
    bound = roofline.decode_bound(1_000_000, config, context_tokens=100, bandwidth_bytes_per_s=1e9, tpot_ms=4.0)
    assert bound["bytes_per_decode_step"] == 1_000_000 + 256 * 100
    assert bound["decode_bound_ms"] == pytest.approx(1.0256)
    assert bound["roofline_fraction"] == pytest.approx(1.0256 / 4)
    assert roofline.decode_bound(None, config, 100, 1e9, 4.0)["decode_bound_ms"] is None


def test_bandwidth_is_measured_once_per_machine(tmp_path):
    first = roofline.bandwidth(tmp_path)
    assert first["bytes_per_s"] > 1e8
    assert roofline.bandwidth(tmp_path) == first  # cached


# A Python stand-in for `perf stat`: prints its count on SIGINT. (A /bin/sh trap would not do: a shell
# cannot trap SIGINT when it starts with SIGINT ignored, as under `nohup ... &`; perf itself can.)
FAKE_PERF = """#!{python}
import pathlib, signal, sys, time
def stop(*_):
    print("123456789,,cycles,1000,100.00,,", file=sys.stderr)
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
pathlib.Path(sys.argv[0] + ".ready").touch()
while True:
    time.sleep(0.01)
"""


def fake_perf(tmp_path, text=FAKE_PERF):
    import sys

    perf = tmp_path / "perf"
    perf.write_text(text.replace("{python}", sys.executable))
    perf.chmod(0o755)
    return perf


def begun(counter, perf):
    """Start the counter and wait until the fake perf has its signal handler (a loaded CI machine
    can take longer than the counter's own 50 ms settle time to start a shell)."""
    counter.begin()
    ready = perf.with_name(perf.name + ".ready")
    for _ in range(500):
        if ready.exists():
            break
        time.sleep(0.01)
    return counter


def test_cycle_counter_reads_perf_stat(tmp_path):
    perf = fake_perf(tmp_path)
    counter = begun(energy.CycleCounter(str(perf)), perf)
    assert counter.end() == 123456789 and counter.reason is None


def test_cycle_counter_says_why_not(tmp_path):
    missing = energy.CycleCounter(str(tmp_path / "no-perf"))
    missing.begin()
    assert missing.end() is None and "perf is not installed" in missing.reason
    perf = fake_perf(tmp_path, FAKE_PERF.replace("123456789", "<not supported>"))
    unsupported = begun(energy.CycleCounter(str(perf)), perf)
    assert unsupported.end() is None and "cycles <not supported> here" in unsupported.reason


def test_records_carry_cycles_and_device_memory_or_their_reasons(write_scenario, tmp_path, tiny_llama):
    from harness import scenario
    from harness.runner import Runner
    from harness.sweep import expand

    loaded = scenario.load(write_scenario("""
        model: tiny-llama
        generation: {max_new_tokens: 4}
        measurement: {warmup_rounds: 0, min_rounds: 2, threads: 2}
        sweep: {adapter: [hf]}
        """))
    (point,) = expand(loaded)
    record = Runner(results_dir=None).run_point(loaded, point)
    assert record.status == "ok", record.reason
    assert record.metrics["cpu_cycles"] is not None or record.details["cpu_cycles_unavailable"]
    assert record.metrics["device_memory_peak_mb"] is None
    assert record.details["device_memory_unavailable"] == "cpu: host memory is peak_rss_mb"
    assert record.metrics["roofline_fraction"] > 0 and record.metrics["decode_bound_ms"] > 0
