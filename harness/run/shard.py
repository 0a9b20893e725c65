"""Deterministic sharding of sweep points across machines, and merging their records back.

Points that share a converted model (same model source, adapter and quantization: one OpenVINO IR,
one quantized GGUF, one Core ML package) land on the same shard, so no two runners convert the same
artefact. Groups are dealt largest first to the least-loaded shard, ties broken by name, so every
runner computes the same split from the same scenario files without talking to the others.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence

from harness.errors import UsageError
from harness.records.record import Record


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int
    source: str = field(default="", compare=False)  # --shard auto: the scheduler's variables it came from

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, env: Optional[Mapping[str, str]] = None) -> Shard:
    """``I/N``, or ``auto``: read from the scheduler's variables in ``env`` (default ``os.environ``;
    ``harness.run.shard_env``)."""
    if (text or "").strip() == "auto":
        from harness.run.shard_env import from_environment

        index, count, source = from_environment(os.environ if env is None else env)
        return Shard(index, count, source)
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard: expected I/N with 1 <= I <= N (e.g. 1/4) or auto, got {text!r}")
    return Shard(int(match.group(1)), int(match.group(2)))


def group_key(scenario, point) -> str:
    return f"{scenario.model.source}|{scenario.model.dtype}|{point.adapter}|{point.quantization}"


def assign(pairs: Sequence[tuple[object, object]], count: int) -> dict[tuple[str, str], int]:
    """{(scenario name, point id): shard index (1-based)} for (scenario, point) pairs."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for scenario, point in pairs:
        groups.setdefault(group_key(scenario, point), []).append((scenario.name, point.id))
    load = [0] * count
    out: dict[tuple[str, str], int] = {}
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        target = min(range(count), key=lambda i: (load[i], i))
        load[target] += len(groups[key])
        for member in groups[key]:
            out[member] = target + 1
    return out


def select(pairs: Sequence[tuple[object, object]], shard: Shard) -> list[tuple[object, object]]:
    owners = assign(pairs, shard.count)
    return [(s, p) for s, p in pairs if owners[(s.name, p.id)] == shard.index]


def merge(records: Iterable[tuple[object, Record]]) -> tuple[list[Record], list[str]]:
    """Combine records from several runners: (merged records, conflicts).

    A point recorded twice keeps the run that ran it when the other only skipped it (each runner
    skips the devices it lacks); two records that both ran it must be the same record, otherwise
    it is a conflict, named with both files.
    """
    chosen: dict[tuple[str, str, str], tuple[object, Record]] = {}
    conflicts: list[str] = []
    for source, record in records:
        key = (record.scenario, record.point_id, record.kind)  # a point's run and gate-only records are both kept
        if key not in chosen:
            chosen[key] = (source, record)
            continue
        kept_source, kept = chosen[key]
        if record.status == "skipped":
            continue
        if kept.status == "skipped":
            chosen[key] = (source, record)
        elif kept.to_dict() != record.to_dict():
            conflicts.append(
                f"{record.scenario}::{record.point_id}: {kept.status} in {kept_source} "
                f"(started {kept.started_at}) and {record.status} in {source} (started {record.started_at})"
            )
    return [record for _, record in chosen.values()], conflicts
