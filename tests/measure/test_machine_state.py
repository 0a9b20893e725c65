"""harness.measure.machine_state: real reads on this machine, other processes' CPU time, the noisy verdict, NVML absent."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.measure import machine_state
from harness.measure.machine_state import Gpu, MachineState, Spread, noisy, watch

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux /proc")

# Which `unavailable` item explains each field left empty.
EXPLAINED_BY = {
    "cpu_mhz_begin": "cpu_mhz",
    "cpu_mhz_end": "cpu_mhz",
    "governors": "governors",
    "load_begin": "load",
    "load_end": "load",
    "busy_cpu_s": "cpu_time",
    "other_cpu_s": "cpu_time",
    "busy_other_share": "cpu_time",
    "steal_s": "cpu_time",
    "cpu_pressure_share": "cpu_pressure",
    "temperature_c_begin": "temperature_c",
    "temperature_c_end": "temperature_c",
    "gpus_begin": "gpus",
    "gpus_end": "gpus",
}
SPIN = "import time\nwhile time.process_time() < {cpu}: pass\nprint(time.process_time(), flush=True)\n"
WATCHER = (
    "import json, sys\nfrom harness.measure import machine_state\nwith machine_state.watch() as state:\n"
    "    print('open', flush=True)\n    sys.stdin.readline()\nprint(json.dumps(state.result().to_dict()))\n"
)


def _spin(seconds: float) -> float:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time() - start


def test_a_real_window_has_load_and_cpu_figures_and_explains_every_gap():
    with watch() as watched:
        time.sleep(0.05)
    state = watched.result()
    assert state.window_s > 0
    assert len(state.load_begin) == 3 and len(state.load_end) == 3
    assert state.cores >= 1 and state.busy_cpu_s >= 0 and state.other_cpu_s >= 0 and state.busy_other_share >= 0
    for name, item in EXPLAINED_BY.items():
        if getattr(state, name) in (None, []):
            assert state.unavailable.get(item), f"{name} is empty and unavailable[{item!r}] does not say why"
    assert set(state.unavailable) <= set(EXPLAINED_BY.values()) | {"own"}


def test_to_dict_is_json_and_round_trips():
    with watch() as watched:
        pass
    state = watched.result()
    text = json.dumps(state.to_dict(), allow_nan=False)
    assert MachineState.from_dict(json.loads(text)) == state


def test_a_busy_neighbour_is_other_cpu_time_and_noisy():
    # The watcher runs in its own process so the spinner (our child, its sibling) is not in its process tree.
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCHER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(machine_state.__file__).parent.parent,
    )
    try:
        assert watcher.stdout.readline().strip() == "open"
        spinner = subprocess.run(
            [sys.executable, "-c", SPIN.format(cpu=1.0)], capture_output=True, text=True, timeout=120, check=True
        )
        out, _ = watcher.communicate("end\n", timeout=120)
    finally:
        watcher.kill()
    state = MachineState.from_dict(json.loads(out))
    assert state.other_cpu_s >= 0.8 * float(spinner.stdout) > 0.3
    assert "other processes used" in noisy(state)


def test_our_own_cpu_burn_is_own_not_other():
    live = None
    with watch() as watched:
        spun = _spin(0.4)  # this process
        reaped = subprocess.run(
            [sys.executable, "-c", SPIN.format(cpu=0.4)], capture_output=True, text=True, timeout=120, check=True
        )  # a child that ended inside the window
        live = subprocess.Popen(
            [sys.executable, "-c", SPIN.format(cpu=0.4) + "import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        live_cpu = float(live.stdout.readline())  # a child still running when the window closes
    live.stdin.close()
    live.wait(timeout=60)
    state = watched.result()
    burned = spun + float(reaped.stdout) + live_cpu
    assert state.own_cpu_s >= 0.9 * burned, (state.own_cpu_s, spun, reaped.stdout, live_cpu)
    assert state.other_cpu_s == pytest.approx(max(0.0, state.busy_cpu_s - state.own_cpu_s), abs=0.002)


def test_unreadable_files_become_reasons_not_errors(monkeypatch):
    def denied(path, missing=None):
        if missing is not None:
            return missing
        raise PermissionError(f"denied: {path}")

    monkeypatch.setattr(machine_state, "_text", denied)
    with watch() as watched:
        _spin(0.05)
    state = watched.result()
    assert state.busy_cpu_s is None and state.other_cpu_s is None and state.cpu_mhz_begin is None
    assert "denied: /proc/stat" in state.unavailable["cpu_time"]
    assert state.own_cpu_s > 0  # rusage still counts this process


def test_a_body_that_raises_still_gives_a_result():
    with pytest.raises(ZeroDivisionError):
        with watch() as watched:
            _ = 1 / 0
    assert watched.result().window_s >= 0


def test_result_before_the_window_closes_is_an_error():
    with watch() as watched:
        with pytest.raises(RuntimeError, match="after the with-block"):
            watched.result()


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, sm_mhz: list[int], reasons: int = 0, fail_init: bool = False):
        self.sm_mhz, self.reasons, self.fail_init = sm_mhz, reasons, fail_init

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return b"Fake H200"

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return self.sm_mhz.pop(0) if clock == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetPerformanceState(self, handle):
        return 0

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 41

    def nvmlDeviceGetPowerUsage(self, handle):
        raise RuntimeError("Not Supported")

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self.reasons


def _with_nvml(monkeypatch, module) -> MachineState:
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setattr(machine_state, "_NVML", [])
    with watch() as watched:
        pass
    return watched.result()


def test_absent_nvml_is_a_reason_not_an_exception(monkeypatch):
    state = _with_nvml(monkeypatch, None)  # `import pynvml` fails
    assert state.gpus_begin == [] and "pynvml is not installed" in state.unavailable["gpus"]
    state = _with_nvml(monkeypatch, FakeNvml([], fail_init=True))
    assert state.gpus_end == [] and state.unavailable["gpus"] == "NVML: NVML Shared Library Not Found"


def test_nvml_readings_and_a_throttled_gpu(monkeypatch):
    state = _with_nvml(monkeypatch, FakeNvml([1980, 1500], reasons=0x40))
    begin, end = state.gpus_begin[0], state.gpus_end[0]
    assert (begin.name, begin.sm_mhz, begin.memory_mhz, begin.pstate) == ("Fake H200", 1980, 3201, 0)
    assert begin.temperature_c == 41
    assert begin.power_w is None and end.sm_mhz == 1500 and "gpus" not in state.unavailable
    reason = noisy(state)
    assert "GPU 0 SM clock fell 1980 -> 1500 MHz" in reason and "GPU 0 throttled (NVML reasons 0x40)" in reason


def test_importing_is_lazy():
    code = (
        "import sys, harness\nfirst = 'harness.measure.machine_state' in sys.modules\nimport harness.measure.machine_state\n"
        "print(first, 'pynvml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]


QUIET = MachineState(
    window_s=2.0,
    cores=4,
    cpu_mhz_begin=Spread(mean=3000, min=2900, max=3100),
    cpu_mhz_end=Spread(mean=2950, min=2900, max=3000),
    load_begin=[1.0, 1.0, 1.0],
    load_end=[2.0, 1.0, 1.0],
    busy_cpu_s=3.0,
    own_cpu_s=2.6,
    other_cpu_s=0.4,
    busy_other_share=0.05,
    steal_s=0.1,
    gpus_begin=[Gpu(index=0, sm_mhz=1980, clock_reasons=0)],
    gpus_end=[Gpu(index=0, sm_mhz=1950, clock_reasons=0x1)],
)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"busy_other_share": 0.3}, "other processes used 30% of 4 cores"),
        ({"steal_s": 1.0}, "the hypervisor took 12% of 4 cores"),
        ({"cpu_mhz_end": Spread(mean=2600, min=2500, max=2700)}, "CPU clock fell 3000 -> 2600 MHz"),
        ({"load_end": [4.5, 2.0, 1.0], "busy_other_share": None}, "load average 4.5 above 4 cores"),
        ({"load_end": [4.5, 2.0, 1.0]}, None),  # our own threads count in the load: others' CPU time decides
        ({"gpus_end": [Gpu(index=0, sm_mhz=1500)]}, "GPU 0 SM clock fell 1980 -> 1500 MHz"),
        ({"gpus_end": [Gpu(index=0, sm_mhz=1980, clock_reasons=0x20)]}, "GPU 0 throttled (NVML reasons 0x20)"),
    ],
)
def test_noisy_names_what_disturbed_the_window(change, says):
    assert noisy(QUIET) is None  # idle GPU reasons (0x1) and small drops are not disturbances
    assert noisy(QUIET.model_copy(update=change)) == says
    assert watch_result_carries_its_verdict()


def watch_result_carries_its_verdict() -> bool:
    with watch() as watched:
        pass
    state = watched.result()
    return state.noisy == noisy(state) and "noisy" in state.to_dict()
