"""Energy through the real Zeus code, driven by a fake RAPL powercap tree whose counters advance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.measure import energy, energy_presence, roofline
from tests.tiny_scenario import tiny

UJ_PER_READ = {"package-0": 500_000, "dram": 125_000}  # each read finds the counter 0.5 J / 0.125 J on


class FakeRapl:
    """intel-rapl:0 (package-0) with a dram subzone whose counters advance each time Zeus reads them.

    Per read, not per wall-clock second: a loaded machine that reads late still sees the same energy,
    so no test depends on how fast a thread ticks.
    """

    def __init__(self, root):
        self.package = root / "intel-rapl:0"
        self.dram = self.package / "intel-rapl:0:0"
        self.reads = {"package-0": 0, "dram": 0}
        for zone, name in ((self.package, "package-0"), (self.dram, "dram")):
            zone.mkdir(parents=True)
            (zone / "name").write_text(name + "\n")
            (zone / "max_energy_range_uj").write_text("262143328850\n")
            (zone / "energy_uj").write_text("1000000\n")

    def advance(self, energy_uj_path: str) -> None:
        zone = Path(energy_uj_path).parent
        name = (zone / "name").read_text().strip()
        self.reads[name] += 1
        tmp = zone / "energy_uj.tmp"
        tmp.write_text(f"{1_000_000 + self.reads[name] * UJ_PER_READ[name]}\n")
        os.replace(tmp, zone / "energy_uj")


@pytest.fixture
def fake_rapl(tmp_path, monkeypatch):
    import zeus.device.cpu as zeus_cpu
    from zeus.device.cpu import rapl

    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "powercap" / "intel-rapl"))
    monkeypatch.setattr(energy_presence, "RAPL_DIRS", (rapl.RAPL_DIR, str(tmp_path / "absent")))
    monkeypatch.setattr(zeus_cpu, "_cpus", None)  # Zeus caches the CPU set per process
    rapl.rapl_is_available.cache_clear()  # and whether RAPL exists (an earlier meter in this process saw none)
    tree = FakeRapl(tmp_path / "powercap" / "intel-rapl")
    zeus_read = rapl.RAPLFile.read

    def read(self):  # Zeus's own read, of a counter that moved on since the last one
        if self.energy_uj_path.startswith(str(tmp_path)):
            tree.advance(self.energy_uj_path)
        return zeus_read(self)

    monkeypatch.setattr(rapl.RAPLFile, "read", read)
    yield tree
    zeus_cpu._cpus = None
    rapl.rapl_is_available.cache_clear()


@pytest.fixture
def no_rapl(tmp_path, monkeypatch):
    import zeus.device.cpu as zeus_cpu
    from zeus.device.cpu import rapl

    monkeypatch.setattr(rapl, "RAPL_DIR", str(tmp_path / "absent"))
    monkeypatch.setattr(rapl, "CONTAINER_RAPL_DIR", str(tmp_path / "absent-too"))
    monkeypatch.setattr(energy_presence, "RAPL_DIRS", (rapl.RAPL_DIR, rapl.CONTAINER_RAPL_DIR))
    monkeypatch.setattr(zeus_cpu, "_cpus", None)
    rapl.rapl_is_available.cache_clear()
    yield
    zeus_cpu._cpus = None
    rapl.rapl_is_available.cache_clear()


def test_every_source_is_measured_or_null_with_a_reason(fake_rapl):
    meter = energy.EnergyMeter()
    meter.begin("w")
    time.sleep(0.01)  # any wall time: the fake counters move per read
    window = meter.end("w")
    assert window.energy_j["cpu_package"] > 0.1 and window.energy_j["dram"] > 0.02
    assert fake_rapl.reads == {"package-0": 2, "dram": 2}  # begin and end read each zone once
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


def test_the_rapl_paths_checked_before_zeus_are_zeus_own():
    from zeus.device.cpu import rapl

    assert energy_presence.RAPL_DIRS == (rapl.RAPL_DIR, rapl.CONTAINER_RAPL_DIR)


NOTHING_HERE = """
import json, sys
from harness.measure import energy, energy_presence
energy_presence.RAPL_DIRS = (%r, %r)
energy_presence.nvml_present = energy_presence.amdsmi_present = energy_presence.soc_present = lambda: False
meter = energy.EnergyMeter()
meter.begin("w")
window = meter.end("w")
print(json.dumps({"unavailable": meter.unavailable, "energy": window.energy_j,
                  "imported": [m for m in ("zeus", "sklearn") if m in sys.modules]}))
"""


def test_a_machine_with_nothing_to_read_never_imports_zeus(tmp_path):
    absent = (str(tmp_path / "intel-rapl"), str(tmp_path / "zeus_sys"))
    done = subprocess.run([sys.executable, "-c", NOTHING_HERE % absent], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["imported"] == []
    assert found["energy"] == dict.fromkeys(energy.SOURCES)
    assert found["unavailable"] == {
        "cpu_package": f"no RAPL interface ({absent[0]} is absent)",
        "dram": f"no RAPL interface ({absent[0]} is absent)",
        "gpu": "no GPU visible to Zeus (NVML / AMDSMI)",
        "soc": "no Apple SoC energy counters",
    }


def test_without_zeus_the_reasons_are_those_zeus_gives(no_rapl, monkeypatch):
    """Where this machine has no GPU or SoC for Zeus, the meter's reasons without Zeus are Zeus's own."""
    if energy_presence.nvml_present() or energy_presence.amdsmi_present() or energy_presence.soc_present():
        pytest.skip("Zeus can read a GPU or SoC here")
    without = energy.EnergyMeter()
    assert without.monitor is None
    through_zeus = energy.EnergyMeter.__new__(energy.EnergyMeter)
    through_zeus.unavailable, through_zeus._open = {}, {}
    through_zeus._open_zeus()
    assert through_zeus.unavailable == without.unavailable


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
    assert "no GPU" in record["unavailable"]["energy_gpu_j"]


def test_roofline_bound_from_bytes_and_bandwidth():
    config = {
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_attention_heads": 4,
        "hidden_size": 64,
    }
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
    from harness.run import planning
    from harness.run.runner import Runner
    from harness.run.settings import RunSettings
    from harness.scenario.sweep import expand

    loaded = planning.load(
        write_scenario(tiny(prompts=None, measurement={"min_rounds": 2, "threads": 2}, sweep={"adapter": ["hf"]}))
    )
    (point,) = expand(loaded)
    record = Runner(RunSettings(results_dir=None)).run_point(loaded, point)
    assert record.status == "ok", record.reason
    assert record.metrics["cpu_cycles"] is not None or record.unavailable["cpu_cycles"]
    assert record.metrics["device_memory_peak_mb"] is None
    assert record.unavailable["device_memory_peak_mb"] == "cpu: host memory is peak_rss_mb"
    assert record.metrics["roofline_fraction"] > 0 and record.metrics["decode_bound_ms"] > 0
