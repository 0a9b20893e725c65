"""Energy and CPU time over a measured window.

Energy comes from Zeus (the PyPI package ``zeus``): CPU package and DRAM through RAPL, GPUs through
NVML/AMDSMI, Apple SoC through its counters. Every source is kept apart; a source that cannot be
measured is ``None`` with the reason, never 0. Zeus's ``total_energy`` counts GPUs only, so it is not
used as a total. CPU time (user + system, this process and its children) is the NPUMoE paper's
offload proxy: less host CPU for the same work means more of it ran on the accelerator.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from harness.measure import energy_presence

if TYPE_CHECKING:
    import subprocess

SOURCES = ("cpu_package", "dram", "gpu", "soc")
NPU_NOTE = (
    "Zeus cannot see Intel or AMD NPUs; cpu_package energy is the closest available figure "
    "(it includes the host's share of the work, not the NPU's)"
)


@dataclass
class Window:
    wall_s: float
    cpu_user_s: float
    cpu_system_s: float
    energy_j: dict[str, Optional[float]] = field(default_factory=dict)


def _cpu_times() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + children.ru_utime, own.ru_stime + children.ru_stime


class EnergyMeter:
    """Opens Zeus once per process, where it could read anything (``energy_presence``); ``begin``/``end`` bracket a window outside any timed region."""

    def __init__(self):
        self.unavailable: dict[str, str] = {}
        self.monitor = None
        self._open: dict[str, tuple[float, float, float]] = {}
        if importlib.util.find_spec("zeus") is None:
            for source in SOURCES:
                self.unavailable[source] = "zeus is not installed: pip install zeus"
            return
        nothing = energy_presence.nothing_to_read()  # Zeus's import costs seconds: not where it reads nothing
        if nothing is not None:
            self.unavailable.update(nothing)
            return
        self._open_zeus()

    def _open_zeus(self) -> None:
        from zeus.device.cpu import rapl
        from zeus.monitor import ZeusMonitor

        self.monitor = ZeusMonitor(sync_execution_with="torch")
        if not self.monitor.cpu_indices:
            if not (os.path.exists(rapl.RAPL_DIR) or os.path.exists(rapl.CONTAINER_RAPL_DIR)):
                why = f"no RAPL interface ({rapl.RAPL_DIR} is absent)"
            else:
                why = "RAPL present but not readable (reading energy_uj needs root)"
            self.unavailable["cpu_package"] = why
            self.unavailable["dram"] = why
        elif not any(self.monitor.cpus.supports_get_dram_energy_consumption(i) for i in self.monitor.cpu_indices):
            self.unavailable["dram"] = "RAPL exposes no dram zone on this CPU"
        if not self.monitor.gpu_indices:
            self.unavailable["gpu"] = energy_presence.NO_GPU
        if not self.monitor.soc_is_present:
            self.unavailable["soc"] = energy_presence.NO_SOC

    @property
    def measures_anything(self) -> bool:
        return len(self.unavailable) < len(SOURCES)

    def begin(self, name: str) -> None:
        user, system = _cpu_times()
        self._open[name] = (time.perf_counter(), user, system)
        if self.monitor is not None:
            self.monitor.begin_window(name, sync_execution=False)

    def end(self, name: str) -> Window:
        measurement = self.monitor.end_window(name, sync_execution=False) if self.monitor is not None else None
        start, user0, system0 = self._open.pop(name)
        user, system = _cpu_times()
        window = Window(time.perf_counter() - start, user - user0, system - system0)
        for source in SOURCES:
            window.energy_j[source] = None if source in self.unavailable else _energy(measurement, source)
        return window


def _energy(measurement, source: str) -> Optional[float]:
    if source == "cpu_package":
        return sum(measurement.cpu_energy.values()) if measurement.cpu_energy else None
    if source == "dram":
        return sum(v for v in measurement.dram_energy.values() if v is not None) if measurement.dram_energy else None
    if source == "gpu":
        return sum(measurement.gpu_energy.values()) if measurement.gpu_energy else None
    soc = measurement.soc_energy
    if soc is None:
        return None
    values = [v for v in vars(soc).values() if isinstance(v, (int, float))]
    return sum(values) / 1000.0 if values else None  # Zeus reports SoC energy in mJ


def metrics(window: Window, tokens: int, prefill: Optional[Window], prompt_tokens: int) -> dict:
    """Record fields from the generation window (and the prefill-only window, if one was measured)."""
    out: dict[str, Optional[float]] = {
        "cpu_user_s": window.cpu_user_s,
        "cpu_system_s": window.cpu_system_s,
        "cpu_utilization": (window.cpu_user_s + window.cpu_system_s) / window.wall_s if window.wall_s else None,
    }
    for source, joules in window.energy_j.items():
        out[f"energy_{source}_j"] = joules
    measured = [j for j in window.energy_j.values() if j is not None]
    total = sum(measured) if measured else None
    out["energy_j"] = total
    out["avg_power_w"] = total / window.wall_s if total is not None and window.wall_s else None
    out["energy_per_token_mj"] = total / tokens * 1e3 if total is not None and tokens else None
    prefill_total = None
    if prefill is not None:
        values = [j for j in prefill.energy_j.values() if j is not None]
        prefill_total = sum(values) if values else None
    out["prefill_energy_per_prompt_token_mj"] = (
        prefill_total / prompt_tokens * 1e3 if prefill_total is not None and prompt_tokens else None
    )
    return out


def unavailable_metrics(unavailable_sources: dict[str, str], device: str) -> dict[str, str]:
    """{metric name: why it is missing or partial} from the meter's unavailable sources."""
    out = {f"energy_{source}_j": why for source, why in unavailable_sources.items()}
    if "npu" in device.lower():
        out["energy_j"] = NPU_NOTE  # measured, but without the NPU's own share
    return out


class CycleCounter:
    """CPU cycles of this process over a window, from ``perf stat`` attached to it, when the kernel allows."""

    def __init__(self, perf: str = "perf"):
        import shutil

        self.perf = shutil.which(perf)
        self.reason: Optional[str] = None if self.perf else "perf is not installed (Debian package linux-perf)"
        self._proc: Optional[subprocess.Popen[str]] = None

    def begin(self) -> None:
        import subprocess

        if self.perf is None:
            return
        self._proc = subprocess.Popen(
            [self.perf, "stat", "-x,", "-e", "cycles", "-p", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.05)  # let perf attach before the window's work starts

    def end(self) -> Optional[int]:
        import signal
        import subprocess

        if self._proc is None:
            return None
        proc, self._proc = self._proc, None
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.reason = "perf stat did not stop"
            return None
        for line in err.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("cycles"):
                if fields[0].strip().isdigit():
                    return int(fields[0])
                self.reason = f"perf stat: cycles {fields[0].strip()} here (kernel or VM does not expose the counter)"
                return None
        self.reason = f"perf stat gave no cycles line: {err.strip()[:200]!r}"
        return None
