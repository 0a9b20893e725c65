"""Figures around the timed rounds (energy, CPU cycles, device memory, the decode roofline), the MoE
router's statistics, and the process's own (peak memory, conversion time)."""

from __future__ import annotations

import json
import resource
import statistics
import sys
from pathlib import Path
from typing import Sequence

from harness.adapters.base import Adapter
from harness.models import sources
from harness.records.record import Routing
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint
from harness.run.steps.timing import Timed


def probes(ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, timed: Timed) -> Contribution:
    """Energy, CPU time and the decode roofline; a prefill-only window when energy is measurable."""
    from harness.measure import energy, roofline

    point, prompt_ids, rounds, meter = resolved.point, resolved.prompt_ids, timed.rounds, timed.meter
    prefill = None
    if meter.measures_anything:
        meter.begin("prefill")
        for r in rounds:  # one-token generations: prefill and the first token only
            adapter.generate([prompt_ids[r.prompt_index]] * point.batch_size, 1)
        prefill = meter.end("prefill")
    generated = sum(r.batch_size * r.n_generated for r in rounds)
    prompt_tokens = sum(r.batch_size * r.prompt_tokens for r in rounds)
    figures = dict(energy.metrics(timed.window, generated, prefill, prompt_tokens))
    figures["cpu_cycles"], cycles_reason = timed.cycles
    unavailable = {
        "cpu_cycles": cycles_reason,
        **energy.unavailable_metrics(meter.unavailable, point.device),
    }
    config = json.loads((Path(resolved.model.hf_dir) / "config.json").read_text())
    context = statistics.median(r.prompt_tokens + r.n_generated / 2 for r in rounds)
    bandwidth = roofline.bandwidth(sources.cache_dir(ctx.settings.cache_dir))["bytes_per_s"]
    weights = adapter.weight_bytes()
    figures.update(
        roofline.decode_bound(weights, config, context, bandwidth, timed.contribution.metrics.get("tpot_ms"))
    )
    unavailable.update(roofline.unavailable(weights))
    return Contribution(metrics=figures, unavailable=unavailable)


NOT_PROBED = "not measured: energy probes off (--no-energy)"
PROBED_METRICS = (
    "energy_j",
    "energy_per_token_mj",
    "cpu_cycles",
    "decode_bound_ms",
    "roofline_fraction",
)


def device_memory(adapter: Adapter) -> Contribution:
    """The device's peak memory over this point (the adapter resets it when the point starts)."""
    peak, why = adapter.device_memory()
    return Contribution(metrics={"device_memory_peak_mb": peak}, unavailable={"device_memory_peak_mb": why})


def not_probed() -> Contribution:
    """What ``probes`` would have measured, each with the reason it was not."""
    return Contribution(unavailable=dict.fromkeys(PROBED_METRICS, NOT_PROBED))


def routing(adapter: Adapter, prompt_ids: Sequence[Sequence[int]]) -> Contribution:
    """MoE: what the router did with these prompts, for the report's load plots."""
    if not adapter.supports_routing:
        return Contribution()
    summary = adapter.routing(prompt_ids)
    if not summary:  # a dense model on an engine that can show routing
        return Contribution()
    parsed = Routing.model_validate(summary)
    return Contribution(
        metrics={"moe_drop_rate": parsed.drop_rate, "moe_imbalance_max": max(parsed.imbalance)},
        updates={"routing": parsed},
    )


_STATUS = "/proc/self/status"


def reset_peak_rss() -> bool:
    """Restart the peak-RSS high-water mark (Linux >= 4.0), so a persistent worker's next point reports its
    own peak; False where the kernel cannot (the peak is then the worker's so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    try:
        with open(_STATUS) as handle:
            for line in handle:
                if line.startswith("VmHWM:"):  # the high-water mark reset_peak_rss restarts
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


def process(resolved: ResolvedPoint) -> Contribution:
    return Contribution(metrics={"peak_rss_mb": peak_rss_mb(), "convert_s": resolved.model.convert_s})
