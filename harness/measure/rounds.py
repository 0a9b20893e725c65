"""Timing: the measurement loop (warm-up, stopping rule) and pure statistics over the raw samples."""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional

from harness.adapters.trace import GenerationTrace


@dataclass(frozen=True)
class Round:
    """One timed generation, reduced to durations (seconds) on the host clock."""

    prompt_index: int
    prompt_tokens: int
    batch_size: int
    ttft_s: float
    gaps_s: tuple[float, ...]  # inter-token gaps: n_generated - 1 of them
    e2e_s: float

    @property
    def n_generated(self) -> int:
        return len(self.gaps_s) + 1

    @classmethod
    def from_trace(cls, trace: GenerationTrace, prompt_index: int) -> Round:
        if not trace.token_ns:
            raise ValueError("the engine produced no tokens")
        times = [trace.start_ns, *trace.token_ns]
        steps = [(b - a) / 1e9 for a, b in zip(times, times[1:])]
        return cls(
            prompt_index=prompt_index,
            prompt_tokens=trace.prompt_tokens,
            batch_size=trace.batch_size,
            ttft_s=steps[0],
            gaps_s=tuple(steps[1:]),
            e2e_s=(trace.token_ns[-1] - trace.start_ns) / 1e9,
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "gaps_s": list(self.gaps_s)}  # lists, as JSON gives them back


@dataclass(frozen=True)
class Stopping:
    warmup_rounds: int = 1
    min_rounds: int = 3
    min_time_s: float = 0.0
    max_rounds: int = 1000


def run_rounds(
    generate: Callable[[int, int], GenerationTrace],
    n_prompts: int,
    stopping: Stopping,
    expected_tokens: int,
    on_round: Optional[Callable[[int], None]] = None,
    around_timed=contextlib.nullcontext,
    warmup_tokens: Optional[int] = None,
) -> tuple[list[float], list[Round]]:
    """Warm up, then time rounds (cycling through prompts) until both min_rounds and min_time_s are met.
    ``generate(prompt index, new tokens)`` runs one generation; a warm-up round asks for ``warmup_tokens``
    (default: ``expected_tokens``, what a timed round asks for).

    Returns (warm-up durations in seconds, timed rounds). A round that generated a different number of
    tokens than asked is an error: silent truncation must never pass as a faster run.
    """
    warmup_tokens = expected_tokens if warmup_tokens is None else warmup_tokens
    warmups = []
    for i in range(stopping.warmup_rounds):
        trace = generate(i % n_prompts, warmup_tokens)
        _check_length(trace, warmup_tokens)
        warmups.append((trace.token_ns[-1] - trace.start_ns) / 1e9)
    rounds: list[Round] = []
    with around_timed():  # e.g. an energy window: opened before the first round, closed after the last
        began = time.perf_counter()
        while len(rounds) < stopping.max_rounds and (
            len(rounds) < stopping.min_rounds or time.perf_counter() - began < stopping.min_time_s
        ):
            index = len(rounds) % n_prompts
            trace = generate(index, expected_tokens)
            _check_length(trace, expected_tokens)
            rounds.append(Round.from_trace(trace, index))
            if on_round:
                on_round(len(rounds))
    return warmups, rounds


def _check_length(trace: GenerationTrace, expected: int) -> None:
    if trace.n_generated != expected:
        raise RuntimeError(f"engine generated {trace.n_generated} tokens, {expected} were asked for")


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarize(rounds: list[Round]) -> dict[str, Optional[float]]:
    """Metrics from raw rounds: pure, no I/O. Latencies in ms, rates in tokens/s.

    ``tpot_ms`` is the median over rounds of (e2e - TTFT) / (n - 1); the ``ms_per_token_*`` figures
    are over every inter-token gap of every round, so tails (p99) are visible.
    """
    if not rounds:
        raise ValueError("no rounds to summarize")
    gaps_ms = [g * 1e3 for r in rounds for g in r.gaps_s]
    median = statistics.median
    decode_rounds = [r for r in rounds if r.n_generated > 1]
    metrics: dict[str, Optional[float]] = {
        "rounds": len(rounds),
        "prompt_tokens": median(r.prompt_tokens for r in rounds),
        "generated_tokens": median(r.n_generated for r in rounds),
        "batch_size": rounds[0].batch_size,
        "ttft_ms": median(r.ttft_s for r in rounds) * 1e3,
        "ttft_ms_p90": _percentile([r.ttft_s * 1e3 for r in rounds], 90),
        "ttft_ms_p99": _percentile([r.ttft_s * 1e3 for r in rounds], 99),
        "e2e_ms": median(r.e2e_s for r in rounds) * 1e3,
        "tpot_ms": None,
        "ms_per_token_mean": None,
        "ms_per_token_p50": None,
        "ms_per_token_p90": None,
        "ms_per_token_p99": None,
        "ms_per_token_stddev": None,
        "prefill_tokens_per_s": median(r.batch_size * r.prompt_tokens / r.ttft_s for r in rounds),
        "decode_tokens_per_s": None,
        "throughput_tokens_per_s": median(r.batch_size * r.n_generated / r.e2e_s for r in rounds),
    }
    if gaps_ms:
        metrics.update(
            tpot_ms=median((r.e2e_s - r.ttft_s) / (r.n_generated - 1) for r in decode_rounds) * 1e3,
            ms_per_token_mean=statistics.fmean(gaps_ms),
            ms_per_token_p50=_percentile(gaps_ms, 50),
            ms_per_token_p90=_percentile(gaps_ms, 90),
            ms_per_token_p99=_percentile(gaps_ms, 99),
            ms_per_token_stddev=statistics.stdev(gaps_ms) if len(gaps_ms) > 1 else 0.0,
            decode_tokens_per_s=median(
                r.batch_size * (r.n_generated - 1) / (r.e2e_s - r.ttft_s) for r in decode_rounds
            ),
        )
    return metrics


def summarize_engine(figures: list[dict]) -> dict[str, float]:
    """Medians of the engine's own per-round figures (e.g. GenAI's perf_metrics), as ``engine_<name>``."""
    keys = sorted({key for f in figures for key in f})
    return {f"engine_{key}": statistics.median(f[key] for f in figures if key in f) for key in keys}
