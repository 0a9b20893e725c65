"""``harness export``: the records' per-token data as rows for other tools (pandas, DuckDB, Arrow).

One file, one row per generated token of every timed round (``kind = "token"``), one per gate
position (``kind = "gate"``), one per token class (``class``) and one for the flip rate (``flips``): analyse
without rerunning on scarce hardware.

- token rows: scenario, point, launch (the independent launch that timed the round, from 0), round,
  prompt, position (0 = the first token), offset_ms (since the request), gap_ms (since the previous
  token; for position 0, since the request: the TTFT);
- gate rows: scenario, point, prompt, position, kl (KL(reference || device) teacher-forced; null in
  top-1 mode), top1_match (1/0), verdict (the point's gate verdict: pass, drift, fail or not judged);
- class rows, one per token class of a point's gate (``correctness.classes``): token_class, positions, kl (the
  class's mean KL), kl_ratio (over its floor at the same positions), top1_agreement, flips and decided (its
  positions whose reference top-1 led by more than the tie margin), flip_rate (flips / decided), verdict (the
  class's KL tier: pass, drift, fail; null where not judged);
- a flips row per gated point with token classes: flip_rate (null under ``gate.min_positions`` decided positions),
  flips, decided, positions, tie_margin, expected_flip_rate (the rate to expect of an engine at the point's KL
  floor, ``harness.correctness.expected_flips``), verdict (pass or drift: reported, it changes no point's verdict);
- speculative rows, one per speculative point: speculative (its value), acceptance_rate, tokens_per_forward,
  speedup (plain over speculative end-to-end time, timed side by side), verdict (greedy equality with the
  plain path: pass or fail; null without a gate).

Every row says its ``record_kind``: ``run`` (``harness run``) or ``verify`` (``harness verify --results``: gate
rows only, the timing columns empty).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

from harness.errors import UsageError
from harness.io import write_bytes_atomic
from harness.records.record import Record

FORMATS = ("parquet", "jsonl")
COLUMNS = (
    "kind",
    "scenario",
    "point",
    "launch",
    "round",
    "prompt",
    "position",
    "offset_ms",
    "gap_ms",
    "kl",
    "top1_match",
    "verdict",
    "record_kind",
    "speculative",
    "acceptance_rate",
    "tokens_per_forward",
    "speedup",
    "token_class",
    "positions",
    "kl_ratio",
    "top1_agreement",
    "flips",
    "decided",
    "flip_rate",
    "tie_margin",
    "expected_flip_rate",
)


def token_rows(record: Record) -> Iterator[dict]:
    for index, sample in enumerate(record.samples.rounds):
        offset = sample.ttft_s * 1e3
        yield _row(
            "token",
            record,
            launch=sample.launch,
            round=index,
            prompt=sample.prompt_index,
            position=0,
            offset_ms=offset,
            gap_ms=offset,
        )
        for position, gap in enumerate(sample.gaps_s, start=1):
            offset += gap * 1e3
            yield _row(
                "token",
                record,
                launch=sample.launch,
                round=index,
                prompt=sample.prompt_index,
                position=position,
                offset_ms=offset,
                gap_ms=gap * 1e3,
            )


def gate_rows(record: Record) -> Iterator[dict]:
    if record.correctness is None:
        return
    for prompt in record.correctness.prompts:
        kls = prompt.position_kl or []
        matches = prompt.position_top1 or []
        for position in range(max(len(kls), len(matches))):
            yield _row(
                "gate",
                record,
                prompt=prompt.prompt,
                position=position,
                kl=kls[position] if position < len(kls) else None,
                top1_match=matches[position] if position < len(matches) else None,
                verdict=record.verdict,
            )


def class_rows(record: Record) -> Iterator[dict]:
    """A row per token class and one for the flip rate (``harness.correctness.class_check``)."""
    check = record.correctness.classes if record.correctness else None
    if check is None or check.skipped is not None:
        return
    for stat in check.classes:
        yield _row(
            "class",
            record,
            token_class=stat.name,
            positions=stat.positions,
            kl=stat.kl_mean,
            kl_ratio=stat.kl_ratio,
            top1_agreement=stat.top1_agreement,
            flips=stat.flips,
            decided=stat.decided,
            flip_rate=stat.flips / stat.decided if stat.decided else None,
            verdict=stat.verdict,
        )
    flips = check.flips
    if flips is not None:
        yield _row(
            "flips",
            record,
            flip_rate=flips.rate,
            flips=flips.flips,
            decided=flips.decided,
            positions=flips.positions,
            tie_margin=flips.tie_margin,
            expected_flip_rate=flips.expected_rate,
            verdict=flips.verdict,
        )


def speculative_rows(record: Record) -> Iterator[dict]:
    value = record.point.get("speculative", "none")
    if value == "none" or record.status != "ok":
        return
    gate = record.correctness.speculative if record.correctness else None
    yield _row(
        "speculative",
        record,
        speculative=value,
        acceptance_rate=record.metrics.get("spec_acceptance_rate"),
        tokens_per_forward=record.metrics.get("spec_tokens_per_forward"),
        speedup=record.metrics.get("spec_speedup"),
        verdict=gate.verdict if gate else None,
    )


def _row(kind: str, record: Record, **values) -> dict:
    return (
        {column: None for column in COLUMNS}
        | {"kind": kind, "scenario": record.scenario, "point": record.point_id, "record_kind": record.kind}
        | values
    )


def rows(records: Iterable[Record]) -> Iterator[dict]:
    for record in records:
        yield from token_rows(record)
        yield from gate_rows(record)
        yield from class_rows(record)
        yield from speculative_rows(record)


def write(records: Iterable[Record], path: str | Path, fmt: str) -> int:
    """Write the rows to ``path`` (atomically); returns how many."""
    if fmt not in FORMATS:
        raise UsageError(f"export --format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    table = list(rows(records))
    if fmt == "jsonl":
        data = "".join(json.dumps(row, allow_nan=False) + "\n" for row in table).encode("utf-8")
    else:
        data = _parquet(table)
    write_bytes_atomic(path, data)
    return len(table)


def _parquet(table: list[dict]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("export --format parquet needs pyarrow: pip install pyarrow (or use --format jsonl)") from None
    import io

    schema = pa.schema(
        [
            ("kind", pa.string()),
            ("scenario", pa.string()),
            ("point", pa.string()),
            ("launch", pa.int32()),
            ("round", pa.int32()),
            ("prompt", pa.int32()),
            ("position", pa.int32()),
            ("offset_ms", pa.float64()),
            ("gap_ms", pa.float64()),
            ("kl", pa.float64()),
            ("top1_match", pa.int8()),
            ("verdict", pa.string()),
            ("record_kind", pa.string()),
            ("speculative", pa.string()),
            ("acceptance_rate", pa.float64()),
            ("tokens_per_forward", pa.float64()),
            ("speedup", pa.float64()),
            ("token_class", pa.string()),
            ("positions", pa.int32()),
            ("kl_ratio", pa.float64()),
            ("top1_agreement", pa.float64()),
            ("flips", pa.int32()),
            ("decided", pa.int32()),
            ("flip_rate", pa.float64()),
            ("tie_margin", pa.float64()),
            ("expected_flip_rate", pa.float64()),
        ]
    )
    arrow = pa.Table.from_pylist(table, schema=schema)
    buffer = io.BytesIO()
    pq.write_table(arrow, buffer)
    return buffer.getvalue()
