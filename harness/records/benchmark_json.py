"""Records carried inside pytest-benchmark JSON, so ``--benchmark-json`` files feed reports and gates.

The plugin puts a compact copy of each point's record in the benchmark's ``extra_info`` under
``harness_record``: the full record minus generated text, logs and the gate's stored reference. The
timed rounds (every token's gap), the launches and their intervals, and the gate's per-prompt,
per-position KL stay, so ``harness export``, ``harness report`` and the regression check read a
benchmark JSON as they read the record files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.records.columns import round_values
from harness.records.record import Record
from harness.records.samples import Samples

KEY = "harness_record"


def compact(record: Record) -> dict:
    small = record.model_copy(
        update={
            "samples": Samples(
                rounds=record.samples.rounds,
                rounds_ms=round_values(record),
                launches=record.samples.launches,
                intervals=record.samples.intervals,
            ),
            "outputs": {},
            "prompt_lengths": [],
            "log": [],
            "failure": None,  # routing stays: the report plots it
            "correctness": record.correctness and record.correctness.model_copy(update={"reference": None}),
        }
    )
    return small.to_dict()


def is_benchmark_json(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list) and "machine_info" in data


def records(data: dict, source: Optional[Path] = None) -> list[Record]:
    """The harness records in a pytest-benchmark JSON document (benchmarks of other plugins are passed over)."""
    out = []
    for index, bench in enumerate(data["benchmarks"]):
        carried = (bench.get("extra_info") or {}).get(KEY)
        if carried is None:
            continue
        out.append(Record.from_dict(carried, source=f"{source}: benchmarks[{index}] ({bench.get('name')})"))
    return out
