"""The machine's state over a timed window (CPU clocks, load, other processes' CPU time, CPU pressure,
temperature, GPU clocks / P-state / power via NVML), so a reader can tell a noisy night from a regression.
Files are read only as the window opens and closes (no thread, no sampling). What the OS does not expose
is None or empty and named in ``unavailable`` with the reason: nothing is guessed and nothing raises.
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from pydantic import BaseModel, ConfigDict

OTHER_SHARE = 0.25  # other processes used more than this share of all cores
STEAL_SHARE = 0.10  # the hypervisor took more than this share of all cores
CLOCK_FALL = 0.10  # a CPU or GPU clock fell by more than this between the window's begin and end
LOAD_PER_CORE = 1.0  # the 1-minute load average (our own threads count in it) above this per core
_SLOWDOWN = 0x04 | 0x08 | 0x20 | 0x40 | 0x80  # NVML reasons: power cap, HW slowdown, SW/HW thermal, power brake
_TICK = os.sysconf("SC_CLK_TCK")  # /proc counts CPU time in these ticks


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Spread(_Part):
    mean: float
    min: float
    max: float


class Gpu(_Part):
    index: int
    name: Optional[str] = None
    sm_mhz: Optional[int] = None
    memory_mhz: Optional[int] = None
    pstate: Optional[int] = None  # 0 = highest performance ... 15 = lowest
    temperature_c: Optional[float] = None
    power_w: Optional[float] = None
    clock_reasons: Optional[int] = None  # NVML clocks-event (throttle) reasons bitmask


class MachineState(_Part):
    """One window's machine state; ``to_dict()`` is what ``record.Launch.machine`` stores."""

    window_s: float
    cores: Optional[int] = None  # CPUs /proc/stat counts (the denominator of the shares)
    cpu_mhz_begin: Optional[Spread] = None  # over cores
    cpu_mhz_end: Optional[Spread] = None
    cpu_mhz_source: Optional[str] = None  # cpufreq | cpuinfo (a VM's cpuinfo often shows the nominal clock)
    governors: list[str] = []
    load_begin: Optional[list[float]] = None  # 1, 5 and 15-minute load averages
    load_end: Optional[list[float]] = None
    busy_cpu_s: Optional[float] = None  # CPU seconds every process used, machine-wide
    own_cpu_s: float = 0.0  # this process (all threads), its children and their descendants
    other_cpu_s: Optional[float] = None  # busy minus own, at least 0
    busy_other_share: Optional[float] = None  # other CPU s / (window s x cores)
    steal_s: Optional[float] = None  # CPU seconds the hypervisor gave to other guests
    cpu_pressure_share: Optional[float] = None  # PSI: share of the window some runnable task waited for a CPU
    temperature_c_begin: Optional[float] = None  # hottest thermal zone / hwmon sensor
    temperature_c_end: Optional[float] = None
    gpus_begin: list[Gpu] = []
    gpus_end: list[Gpu] = []
    unavailable: dict[str, str] = {}  # item -> why: cpu_mhz, governors, load, cpu_time, ...
    noisy: Optional[str] = None  # why the window looks disturbed (``noisy()``), read by records.columns

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MachineState":
        return cls.model_validate(data)


def _text(path: str, missing: Optional[str] = None) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        if missing is None:
            raise
        return missing


def _own_cpu_s() -> float:
    """CPU seconds of this process, its reaped children and its live descendants (no rusage holds a child
    still running; its /proc stat does, with the children it reaped itself)."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    todo: list[int | str]
    total, todo = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime, [os.getpid()]
    while todo:
        for path in glob.glob(f"/proc/{todo.pop()}/task/*/children"):
            for kid in _text(path, missing="").split():  # a child that ended meanwhile is in `reaped`
                fields = _text(f"/proc/{kid}/stat", missing="").rpartition(")")[2].split()
                total += sum(int(v) for v in fields[11:15]) / _TICK  # utime stime cutime cstime
                todo.append(kid)
    return total


def _cpu_time() -> tuple[float, float, int]:
    """Machine-wide busy and stolen CPU seconds since boot, and the CPU count, from /proc/stat."""
    lines = _text("/proc/stat").splitlines()
    user, nice, system, _idle, _iowait, irq, softirq, steal = ([int(v) for v in lines[0].split()[1:]] + [0] * 8)[:8]
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return (user + nice + system + irq + softirq) / _TICK, steal / _TICK, cores  # guest time is inside user


def _cpu_pressure() -> float:
    some = next(line for line in _text("/proc/pressure/cpu").splitlines() if line.startswith("some"))
    return int(some.rpartition("total=")[2]) / 1e6


def _cpu_mhz() -> tuple[Spread, str]:
    source, values = (
        "cpufreq",
        [int(_text(p)) / 1000 for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")],
    )
    if not values:
        source, values = (
            "cpuinfo",
            [
                float(line.partition(":")[2])
                for line in _text("/proc/cpuinfo").splitlines()
                if line.startswith("cpu MHz")
            ],
        )
    if not values:
        raise LookupError("no cpufreq scaling_cur_freq and no 'cpu MHz' in /proc/cpuinfo")
    return Spread(mean=round(sum(values) / len(values), 1), min=min(values), max=max(values)), source


def _governors() -> list[str]:
    found = {_text(p).strip() for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")}
    if not found:
        raise LookupError("no cpufreq scaling_governor (no cpufreq driver, as in most VMs)")
    return sorted(found)


def _temperature_c() -> float:
    readings = []
    for path in glob.glob("/sys/class/thermal/thermal_zone*/temp") + glob.glob("/sys/class/hwmon/hwmon*/temp*_input"):
        with contextlib.suppress(OSError, ValueError):  # some sensors refuse reads (EINVAL, ENODATA)
            readings.append(int(_text(path)) / 1000)
    if not readings:
        raise LookupError("no thermal zone or hwmon temperature sensor exposed")
    return max(readings)


_NVML: list = []  # [module] once NVML opened, [None, why] once it failed: opened once per process


def _nvml():
    if not _NVML:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML.append(pynvml)
        except ImportError:
            _NVML.extend([None, "pynvml is not installed (pip install nvidia-ml-py)"])
        except Exception as error:  # pynvml.NVMLError and its many subclasses
            _NVML.extend([None, f"NVML: {error}"])
    if _NVML[0] is None:
        raise LookupError(_NVML[1])
    return _NVML[0]


def _ask(fn, *args):
    with contextlib.suppress(Exception):  # NVMLError_NotSupported and kin: that figure stays None
        return fn(*args)


def _gpus() -> list[Gpu]:
    nv, gpus = _nvml(), []
    reasons = (
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)  # the newer name
        or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    for index in range(nv.nvmlDeviceGetCount()):
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        name, power = _ask(nv.nvmlDeviceGetName, handle), _ask(nv.nvmlDeviceGetPowerUsage, handle)
        gpus.append(
            Gpu(
                index=index,
                name=name.decode() if isinstance(name, bytes) else name,
                sm_mhz=_ask(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
                memory_mhz=_ask(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_MEM),
                pstate=_ask(nv.nvmlDeviceGetPerformanceState, handle),
                temperature_c=_ask(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU),
                power_w=power / 1000 if power is not None else None,
                clock_reasons=_ask(reasons, handle),
            )
        )
    return gpus


_GAUGES = (
    ("cpu_mhz", _cpu_mhz),
    ("load", lambda: [round(v, 2) for v in os.getloadavg()]),
    ("temperature_c", _temperature_c),
    ("gpus", _gpus),
)
_COUNTERS = (("cpu_time", _cpu_time), ("cpu_pressure", _cpu_pressure), ("own", _own_cpu_s), ("at", time.perf_counter))


def _read(readers, why: dict[str, str], into: dict[str, Any]) -> None:
    for item, read in readers:
        try:
            into[item] = read()
        except Exception as error:  # a missing file, an odd format, a driver error: a reason, never a crash
            why.setdefault(item, str(error) or type(error).__name__)


class Watch:
    """What ``watch()`` yields; ``result()`` is ready once the with-block has ended."""

    _result: Optional[MachineState] = None

    def result(self) -> MachineState:
        if self._result is None:
            raise RuntimeError("machine_state.watch(): result() is ready only after the with-block ends")
        return self._result


@contextlib.contextmanager
def watch() -> Iterator[Watch]:
    """``with watch() as state: <timed rounds>`` then ``state.result()``; files are read only here, at the edges."""
    why: dict[str, str] = {}
    begin: dict[str, float] = {}
    end: dict[str, float] = {}
    state = Watch()
    _read((("governors", _governors), *_GAUGES, *_COUNTERS), why, begin)  # the clock last before the window ...
    try:
        yield state
    finally:
        _read((*reversed(_COUNTERS), *_GAUGES), why, end)  # ... and first after it
        state._result = _build(begin, end, why)


def _build(begin: dict, end: dict, why: dict[str, str]) -> MachineState:
    window = end["at"] - begin["at"]
    own = max(0.0, end.get("own", 0.0) - begin.get("own", 0.0))
    state = MachineState(
        window_s=round(window, 6),
        own_cpu_s=round(own, 3),
        governors=begin.get("governors", []),
        load_begin=begin.get("load"),
        load_end=end.get("load"),
        temperature_c_begin=begin.get("temperature_c"),
        temperature_c_end=end.get("temperature_c"),
        gpus_begin=begin.get("gpus", []),
        gpus_end=end.get("gpus", []),
        unavailable=why,
    )
    if "cpu_mhz" in begin and "cpu_mhz" in end:
        (state.cpu_mhz_begin, state.cpu_mhz_source), (state.cpu_mhz_end, _) = begin["cpu_mhz"], end["cpu_mhz"]
    if "cpu_time" in begin and "cpu_time" in end:
        (busy0, steal0, _), (busy1, steal1, cores) = begin["cpu_time"], end["cpu_time"]
        state.cores, state.busy_cpu_s, state.steal_s = cores, round(busy1 - busy0, 3), round(steal1 - steal0, 3)
        state.other_cpu_s = round(max(0.0, busy1 - busy0 - own), 3)
        state.busy_other_share = round(state.other_cpu_s / (window * cores), 4) if window > 0 and cores else None
    if "cpu_pressure" in begin and "cpu_pressure" in end and window > 0:
        state.cpu_pressure_share = round((end["cpu_pressure"] - begin["cpu_pressure"]) / window, 4)
    state.noisy = noisy(state)  # decided once, where the window is measured, and stored with the launch
    return state


def noisy(state: MachineState) -> Optional[str]:
    """A one-line reason when the window looks disturbed, else None."""
    reasons, cores = [], state.cores
    if state.busy_other_share is not None and state.busy_other_share > OTHER_SHARE:
        reasons.append(f"other processes used {state.busy_other_share:.0%} of {cores} cores")
    steal = state.steal_s / (state.window_s * cores) if state.steal_s and cores and state.window_s > 0 else 0.0
    if steal > STEAL_SHARE:
        reasons.append(f"the hypervisor took {steal:.0%} of {cores} cores")
    begin, end = state.cpu_mhz_begin, state.cpu_mhz_end
    if begin and end and end.mean < begin.mean * (1 - CLOCK_FALL):
        reasons.append(f"CPU clock fell {begin.mean:.0f} -> {end.mean:.0f} MHz")
    loads = [load[0] for load in (state.load_begin, state.load_end) if load]
    # The load average counts our own threads; it stands in only where other processes' CPU time is unknown.
    if state.busy_other_share is None and cores and loads and max(loads) > LOAD_PER_CORE * cores:
        reasons.append(f"load average {max(loads):.1f} above {cores} cores")
    for gpu0, gpu1 in zip(state.gpus_begin, state.gpus_end):
        if gpu0.sm_mhz and gpu1.sm_mhz is not None and gpu1.sm_mhz < gpu0.sm_mhz * (1 - CLOCK_FALL):
            reasons.append(f"GPU {gpu1.index} SM clock fell {gpu0.sm_mhz} -> {gpu1.sm_mhz} MHz")
        if gpu1.clock_reasons and gpu1.clock_reasons & _SLOWDOWN:
            reasons.append(f"GPU {gpu1.index} throttled (NVML reasons {gpu1.clock_reasons:#x})")
    return "; ".join(reasons) or None
