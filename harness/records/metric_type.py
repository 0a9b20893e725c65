"""What a catalogued metric is (``Metric``: name, unit, direction, label, source) and the sources a figure
can come from (``SOURCES``). The catalogue of every metric is ``harness.records.metrics``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Where a figure comes from (``Metric.source``): the clock, the counter or the sensor behind it.
HOST = "host clock"
ENGINE = "engine counter"
SENSOR = "energy sensor"
OS = "OS accounting"
HW = "hardware counter"
DERIVED = "derived"
WORKLOAD = "workload"
PROBE = "routing probe"
SOURCES: dict[str, str] = {
    HOST: "the harness's own monotonic clock on the host (time.perf_counter_ns), around engine calls",
    ENGINE: "the engine's own figures or allocator (OpenVINO GenAI perf_metrics, llama.cpp's perf context, "
    "XRT call timings, torch's device memory peak)",
    SENSOR: "energy counters read through Zeus (RAPL, NVML, AMD SMI, Apple SoC) over the timed rounds",
    OS: "the operating system's accounting of the process (rusage CPU time, resident memory)",
    HW: "a CPU performance counter (perf stat cycles)",
    DERIVED: "computed from the model's size and measured figures (the roofline bound), not measured itself",
    WORKLOAD: "counts of what the point ran (rounds, tokens, sequences)",
    PROBE: "the harness's hooks on the model's MoE router over a prefill",
}


@dataclass(frozen=True)
class Metric:
    name: str  # the key in a record's metrics
    unit: str
    higher_is_better: Optional[bool]
    alias: Optional[str] = None  # a short name users type (``--max-regression tpot=5%``)
    label: str = ""  # for axes and headers; the name when empty
    description: str = ""
    source: str = ""  # one of SOURCES: where the figure comes from

    @property
    def axis_label(self) -> str:
        return f"{self.label or self.name} ({self.unit})"
