"""Records carried inside pytest-benchmark JSON, so ``--benchmark-json`` files feed reports and gates.

The plugin puts a compact copy of each point's record in the benchmark's ``extra_info`` under
``harness_record``: the full record minus generated text and raw gaps (per-round figures are kept,
so the regression gate still knows each point's spread).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.results import Record, round_values

KEY = "harness_record"


def compact(record: Record) -> dict:
    data = record.to_dict()
    data["samples"] = {"rounds_ms": round_values(record)}
    data["details"] = {k: v for k, v in record.details.items() if k == "routing"}  # small; the report plots it
    data["correctness"] = {k: v for k, v in record.correctness.items() if k not in ("prompts", "reference")}
    return data


def is_benchmark_json(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list) and "machine_info" in data


def records(data: dict, source: Optional[Path] = None) -> list[Record]:
    """The harness records in a pytest-benchmark JSON document (benchmarks of other plugins are passed over)."""
    out = []
    for index, bench in enumerate(data["benchmarks"]):
        carried = (bench.get("extra_info") or {}).get(KEY)
        if carried is None:
            continue
        try:
            out.append(Record.from_dict(carried))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: benchmarks[{index}] ({bench.get('name')}): {exc}") from None
    return out
