"""Shared by the benchmark scripts (run as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

from harness.run import planning
from harness.scenario.sweep import expand


def single_point(model: str, adapter: str = "hf", max_new_tokens: int = 32, min_rounds: int = 4):
    """A one-point scenario (no file) on ``model``: the scenario and its point."""
    loaded = planning.loads(
        f"""
model: {model}
prompts: ["The capital of France is"]
generation: {{max_new_tokens: {max_new_tokens}}}
measurement: {{warmup_rounds: 1, min_rounds: {min_rounds}, threads: 2}}
sweep: {{adapter: [{adapter}]}}
""",
        "<benchmark>",
        "bench",
    )
    (point,) = expand(loaded)
    return loaded, point


def ours_vs_engine(adapter, ids, rounds: int, tokens: int, engine_ttft_key: str) -> dict:
    """Medians of our per-token clock and the engine's own figures over the same generations, and
    the median per-round ratios (ours / engine's)."""
    import statistics

    from harness.measure.rounds import Round

    adapter.generate([ids], tokens)  # warm-up
    ours_tpot, engine_tpot, ours_ttft, engine_ttft = [], [], [], []
    for _ in range(rounds):
        trace = adapter.generate([ids], tokens)
        r = Round.from_trace(trace, 0)
        ours_tpot.append((r.e2e_s - r.ttft_s) / (r.n_generated - 1) * 1e3)
        ours_ttft.append(r.ttft_s * 1e3)
        engine_tpot.append(trace.engine_metrics["tpot_ms"])
        engine_ttft.append(trace.engine_metrics[engine_ttft_key])
    med = statistics.median
    return {
        "tpot_ours": med(ours_tpot),
        "tpot_engine": med(engine_tpot),
        "tpot_ratio": med(o / t for o, t in zip(ours_tpot, engine_tpot)),
        "ttft_ours": med(ours_ttft),
        "ttft_engine": med(engine_ttft),
        "ttft_ratio": med(o / t for o, t in zip(ours_ttft, engine_ttft)),
    }
