"""Bencher Metric Format (BMF): the points' headline figures as JSON that Bencher (bencher.dev) tracks,
``bencher run --adapter json --file FILE``.

``{benchmark: {measure: {value, lower_value, upper_value}}}``: a benchmark per point that ran
(``scenario::id``), a measure per headline metric it has (``tpot_ms``, ``ttft_ms``, ...), its value, and the
95 % interval over launches as the bounds where two or more launches measured it (the plain value alone
otherwise). Skipped and failed points have no figures, so no entry. Pure but for ``write``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

from harness.records.columns import has_interval
from harness.records.record import Record

# The figures a nightly tracks: latency per token and to the first token, throughput, memory.
MEASURES = ("tpot_ms", "ttft_ms", "ms_per_token_p90", "decode_tokens_per_s", "prefill_tokens_per_s", "peak_rss_mb")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def document(records: Iterable[Record]) -> dict:
    out: dict = {}
    for record in records:
        if record.status != "ok" or record.correctness_only:
            continue
        measures = {}
        for name in MEASURES:
            value = record.metrics.get(name)
            if not _finite(value):
                continue
            entry = {"value": float(value)}
            interval = record.samples.intervals.get(name)
            if has_interval(interval) and _finite(interval.low) and _finite(interval.high):
                entry["lower_value"] = float(min(interval.low, value))
                entry["upper_value"] = float(max(interval.high, value))
            measures[name] = entry
        if measures:
            out[f"{record.scenario}::{record.point_id}"] = measures
    return out


def write(records: Iterable[Record], path: str | Path) -> int:
    """Write the BMF document atomically; returns how many benchmarks it holds."""
    from harness.io import write_bytes_atomic

    data = document(records)
    write_bytes_atomic(path, (json.dumps(data, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    return len(data)
