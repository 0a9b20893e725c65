"""The metric catalogue: every figure a record's ``metrics`` can carry, with its unit, direction and source.

Tables, plots, the regression check and the command line read names, units, labels and directions
from here and nowhere else (what an entry is: ``harness.records.metric_type``; looking one up by name or
alias: ``harness.records.metric_names``). Adding a metric is one entry below plus the code that computes it.
``higher_is_better`` is None for figures with no better direction (counts, sizes, bounds); the
regression check refuses to judge those.
"""

from __future__ import annotations

from harness.records.metric_type import DERIVED, ENGINE, HOST, HW, OS, PROBE, SENSOR, SOURCES, WORKLOAD, Metric


def _m(name, unit, higher, label="", description="", alias=None, *, source: str) -> Metric:
    return Metric(name, unit, higher, alias, label, description, source)


LOWER, HIGHER, NEITHER = False, True, None


CATALOGUE: tuple[Metric, ...] = (
    # measure.summarize: the host clock over the timed rounds
    _m("rounds", "count", NEITHER, "timed rounds", source=WORKLOAD),
    _m("prompt_tokens", "tokens", NEITHER, "prompt tokens", "median prompt length over rounds", source=WORKLOAD),
    _m("generated_tokens", "tokens", NEITHER, "generated tokens", "median tokens generated per round", source=WORKLOAD),
    _m("batch_size", "sequences", NEITHER, "batch size", source=WORKLOAD),
    _m("ttft_ms", "ms", LOWER, "first token", "median time to first token", alias="ttft", source=HOST),
    _m(
        "ttft_ms_p90", "ms", LOWER, "first token p90", "90th percentile of time to first token over rounds", source=HOST
    ),
    _m(
        "ttft_ms_p99",
        "ms",
        LOWER,
        "first token p99",
        "99th percentile of time to first token over rounds",
        alias="ttft_p99",
        source=HOST,
    ),
    _m("e2e_ms", "ms", LOWER, "end to end", "median duration of a whole generation", alias="e2e", source=HOST),
    _m(
        "tpot_ms",
        "ms/token",
        LOWER,
        "next token",
        "median over rounds of (e2e - TTFT) / (n - 1)",
        alias="tpot",
        source=HOST,
    ),
    _m("ms_per_token_mean", "ms/token", LOWER, "ms/token mean", "mean inter-token gap", source=HOST),
    _m("ms_per_token_p50", "ms/token", LOWER, "ms/token p50", "median inter-token gap", source=HOST),
    _m("ms_per_token_p90", "ms/token", LOWER, "ms/token p90", "90th percentile inter-token gap", source=HOST),
    _m("ms_per_token_p99", "ms/token", LOWER, "ms/token p99", "99th percentile inter-token gap", source=HOST),
    _m("ms_per_token_stddev", "ms/token", LOWER, "ms/token stddev", "spread of the inter-token gaps", source=HOST),
    _m("prefill_tokens_per_s", "tokens/s", HIGHER, "prefill rate", "prompt tokens over TTFT", source=HOST),
    _m(
        "decode_tokens_per_s",
        "tokens/s",
        HIGHER,
        "decode rate",
        "generated tokens after the first over their time",
        source=HOST,
    ),
    _m(
        "throughput_tokens_per_s",
        "tokens/s",
        HIGHER,
        "throughput",
        "generated tokens over e2e",
        alias="throughput",
        source=HOST,
    ),
    # measure.summarize_engine: medians of the engines' own figures (engine_<name>)
    _m(
        "engine_ttft_ms",
        "ms",
        LOWER,
        "engine TTFT",
        "the engine's own time to first token (OpenVINO GenAI)",
        source=ENGINE,
    ),
    _m("engine_tpot_ms", "ms/token", LOWER, "engine ms/token", "the engine's own time per output token", source=ENGINE),
    _m("engine_prompt_eval_ms", "ms", LOWER, "engine prompt eval", "llama.cpp's prompt evaluation time", source=ENGINE),
    _m(
        "engine_prefill_real_tokens",
        "tokens",
        NEITHER,
        "prefill tokens",
        "prompt tokens a static prefill carried",
        source=ENGINE,
    ),
    _m(
        "engine_prefill_padded_tokens",
        "tokens",
        NEITHER,
        "padded prefill",
        "tokens a static prefill ran, padding in",
        source=ENGINE,
    ),
    _m(
        "engine_padding_waste",
        "ratio",
        LOWER,
        "padding waste",
        "share of a static prefill spent on padding",
        source=ENGINE,
    ),
    _m("engine_call_write_ms", "ms", LOWER, "host->device write", "per-call input transfer (XRT)", source=ENGINE),
    _m("engine_call_run_ms", "ms", LOWER, "kernels", "per-call kernel time (XRT)", source=ENGINE),
    _m("engine_call_read_ms", "ms", LOWER, "device->host read", "per-call output transfer (XRT)", source=ENGINE),
    # energy.metrics and the counters beside it
    # measure.speculation: a speculative point's verify steps, and its plain path timed beside it
    _m(
        "spec_acceptance_rate",
        "ratio",
        HIGHER,
        "acceptance rate",
        "draft candidates the target accepted",
        source=WORKLOAD,
    ),
    _m(
        "spec_accepted_per_step",
        "tokens",
        HIGHER,
        "accepted per verify step",
        "mean candidates accepted per verify step that had any",
        source=WORKLOAD,
    ),
    _m(
        "spec_tokens_per_forward",
        "tokens",
        HIGHER,
        "tokens per target forward",
        "tokens emitted per target forward, the prefill's included",
        source=WORKLOAD,
    ),
    _m("spec_verify_steps", "count", NEITHER, "target forwards", "median target forwards per round", source=WORKLOAD),
    _m(
        "spec_draft_ms_per_token",
        "ms/token",
        LOWER,
        "draft time per token",
        "time spent proposing candidates per generated token",
        source=HOST,
    ),
    _m(
        "spec_plain_ttft_ms",
        "ms",
        LOWER,
        "first token without speculation",
        "the same loaded target without speculation, timed in the same launch",
        source=HOST,
    ),
    _m("spec_plain_tpot_ms", "ms/token", LOWER, "ms/token without speculation", source=HOST),
    _m("spec_plain_tokens_per_s", "tokens/s", HIGHER, "tokens/s without speculation", source=HOST),
    _m(
        "spec_speedup",
        "x",
        HIGHER,
        "speculative speed-up",
        "end-to-end time without speculation over with it (above 1: faster)",
        alias="speedup",
        source=DERIVED,
    ),
    _m(
        "spec_decode_speedup",
        "x",
        HIGHER,
        "speculative decode speed-up",
        "ms/token without speculation over with it",
        source=DERIVED,
    ),
    _m("energy_j", "J", LOWER, "energy", "all measured sources over the timed rounds", alias="energy", source=SENSOR),
    _m("energy_cpu_package_j", "J", LOWER, "CPU package energy", source=SENSOR),
    _m("energy_dram_j", "J", LOWER, "DRAM energy", source=SENSOR),
    _m("energy_gpu_j", "J", LOWER, "GPU energy", source=SENSOR),
    _m("energy_soc_j", "J", LOWER, "SoC energy", source=SENSOR),
    _m("avg_power_w", "W", LOWER, "average power", source=SENSOR),
    _m("energy_per_token_mj", "mJ/token", LOWER, "energy per token", alias="energy_per_token", source=SENSOR),
    _m("prefill_energy_per_prompt_token_mj", "mJ/token", LOWER, "prefill energy per prompt token", source=SENSOR),
    _m("cpu_user_s", "s", LOWER, "CPU user time", source=OS),
    _m("cpu_system_s", "s", LOWER, "CPU system time", source=OS),
    _m(
        "cpu_utilization",
        "cores",
        LOWER,
        "CPU cores busy",
        "host CPU time over wall time: less means more offloaded",
        source=OS,
    ),
    _m(
        "cpu_cycles", "cycles", LOWER, "CPU cycles", "perf stat cycles of this process over the timed rounds", source=HW
    ),
    _m("device_memory_peak_mb", "MiB", LOWER, "device memory peak", source=ENGINE),
    # roofline.decode_bound
    _m(
        "bytes_per_decode_step",
        "bytes",
        NEITHER,
        "bytes per decode step",
        "weights plus the KV cache read per step",
        source=DERIVED,
    ),
    _m(
        "memory_bandwidth_gb_s",
        "GB/s",
        NEITHER,
        "memory bandwidth",
        "the machine's measured triad bandwidth",
        source=HOST,
    ),
    _m(
        "decode_bound_ms",
        "ms/token",
        NEITHER,
        "decode bound",
        "bytes per step over bandwidth: the fastest possible",
        source=DERIVED,
    ),
    _m(
        "roofline_fraction",
        "ratio",
        HIGHER,
        "roofline fraction",
        "decode bound over measured ms/token",
        alias="roofline",
        source=DERIVED,
    ),
    _m("prefill_compute_bound_ms", "ms", NEITHER, "prefill compute bound", source=DERIVED),
    # runner: the point's life cycle
    _m("peak_rss_mb", "MiB", LOWER, "peak RSS", "peak resident memory of the process", alias="peak_rss", source=OS),
    _m("convert_s", "s", LOWER, "conversion", "model conversion (first point of a model only)", source=HOST),
    _m("load_s", "s", LOWER, "load", "adapter.load", source=HOST),
    _m("first_call_s", "s", LOWER, "first call", "a freshly loaded engine's first warm-up generation", source=HOST),
    _m("gate_s", "s", LOWER, "correctness gate", source=HOST),
    _m("accuracy_s", "s", LOWER, "task accuracy", source=HOST),
    _m(
        "moe_drop_rate",
        "ratio",
        LOWER,
        "MoE drop rate",
        "token-slots dropped by a static expert capacity",
        source=PROBE,
    ),
    _m(
        "moe_imbalance_max",
        "ratio",
        LOWER,
        "MoE imbalance",
        "largest per-layer max/mean tokens per expert",
        source=PROBE,
    ),
    # adapters' load_figures
    _m("export_s", "s", LOWER, "export", "OpenVINO IR export", source=HOST),
    _m("compile_s", "s", LOWER, "compile", "device compilation without a cache", source=HOST),
    _m("compile_cold_s", "s", LOWER, "compile (cold cache)", source=HOST),
    _m("compile_warm_s", "s", LOWER, "compile (warm cache)", source=HOST),
    _m("quantize_s", "s", LOWER, "quantize", "llama.cpp GGUF quantization", source=HOST),
    _m("model_load_s", "s", LOWER, "model load", "llama.cpp model load", source=HOST),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in CATALOGUE}
BY_ALIAS: dict[str, Metric] = {m.alias: m for m in CATALOGUE if m.alias}
# What a summary shows first, in this order (overview tables, the run table, comparisons).
HEADLINE = ("ttft_ms", "tpot_ms", "decode_tokens_per_s", "energy_per_token_mj")
# Metrics summarised per independent launch (record.samples.launches); the regression check tests these
# on launch-level values.
LAUNCH = HEADLINE
# Per-token spread, in the order the spread table lists it.
SPREAD = ("ms_per_token_p50", "ms_per_token_p90", "ms_per_token_p99", "ms_per_token_mean", "ms_per_token_stddev")


def _check() -> None:
    clashes = [alias for alias, metric in BY_ALIAS.items() if BY_NAME.get(alias, metric) is not metric]
    if len(BY_NAME) != len(CATALOGUE) or len(BY_ALIAS) != sum(bool(m.alias) for m in CATALOGUE) or clashes:
        raise RuntimeError("harness.records.metrics: duplicate metric names or aliases")
    unsourced = [m.name for m in CATALOGUE if m.source not in SOURCES]
    if unsourced:
        raise RuntimeError(f"harness.records.metrics: metrics without a source in SOURCES: {', '.join(unsourced)}")


_check()
