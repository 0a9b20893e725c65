"""KL by position bucket: where along the sequence the device departs from the reference.

A teacher-forced position's **position** is the index, in the whole sequence, of the token its logits
predict (the prompt's length plus the position in the continuation). Buckets are 0-63, 64-255, 256-511,
then doubling (512-1023, 1024-2047, ...). The reference stores each bucket's noise floor (its fp32 KL,
``noise_floor.buckets``); a point's bucket is judged against it with the gate's drift/fail factors once it
holds ``MIN_POSITIONS`` positions and the point's positions fall in more than one bucket (one bucket is
the overall mean, already judged). A fault that starts at position N then fails by its bucket, not
averaged with the correct positions before it. Pure functions.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.correctness.kl import MIN_FLOOR, tier
from harness.records.kl_tier import PositionBucket

FIRST_EDGES = (0, 64, 256, 512)
MIN_POSITIONS = 16  # a bucket judged on fewer positions would judge its noise


def bucket_of(position: int) -> tuple[int, int]:
    """(first, last) position of the bucket holding ``position``."""
    for start, end in zip(FIRST_EDGES, FIRST_EDGES[1:]):
        if position < end:
            return start, end - 1
    start = FIRST_EDGES[-1]
    while position >= 2 * start:
        start *= 2
    return start, 2 * start - 1


def pooled(per_prompt: Sequence[Sequence[float]], offsets: Sequence[int]) -> dict[tuple[int, int], list[float]]:
    """Per-position values of every prompt by bucket; ``offsets[i]`` is prompt i's first position."""
    found: dict[tuple[int, int], list[float]] = {}
    for values, offset in zip(per_prompt, offsets):
        for index, value in enumerate(values):
            found.setdefault(bucket_of(offset + index), []).append(value)
    return dict(sorted(found.items()))


def floors(per_prompt: Sequence[Sequence[float]], offsets: Sequence[int]) -> list[dict]:
    """The reference's per-bucket noise floor, as stored: ``[{start, end, kl_mean, positions}]``."""
    return [
        {"start": start, "end": end, "kl_mean": float(np.mean(values)), "positions": len(values)}
        for (start, end), values in pooled(per_prompt, offsets).items()
    ]


def buckets(
    per_prompt: Sequence[Sequence[float]],
    offsets: Sequence[int],
    noise_floor: dict,
    drift_factor: float,
    fail_factor: float,
) -> list[PositionBucket]:
    """Each bucket's mean KL against its stored floor (the overall floor for a reference without one)."""
    stored = {(b["start"], b["end"]): b["kl_mean"] for b in noise_floor.get("buckets") or []}
    overall = max(noise_floor["kl_mean"], MIN_FLOOR)
    parts = pooled(per_prompt, offsets)
    judged = len(parts) > 1
    out = []
    for (start, end), values in parts.items():
        floor = stored.get((start, end))
        source = "bucket" if floor is not None else "overall"
        floor = max(floor, MIN_FLOOR) if floor is not None else overall
        mean = float(np.mean(values))
        ratio = mean / floor
        out.append(
            PositionBucket(
                start=start,
                end=end,
                positions=len(values),
                kl_mean=mean,
                noise_floor=floor,
                kl_ratio=ratio,
                verdict=tier(ratio, drift_factor, fail_factor) if judged and len(values) >= MIN_POSITIONS else None,
                floor_source=source,
            )
        )
    return out


def judge(parts: Sequence[PositionBucket], drift_factor: float, fail_factor: float) -> tuple[list[str], list[str]]:
    """(fail reasons, drift reasons) of the judged buckets."""

    def line(b: PositionBucket, digits: int, factor: float, word: str) -> str:
        return (
            f"positions {b.start}-{b.end} mean KL {b.kl_mean:.3g} is {b.kl_ratio:.{digits}f}x its noise floor "
            f"{b.noise_floor:.3g} ({word} above {factor:g}x)"
        )

    fails = [line(b, 0, fail_factor, "fail") for b in parts if b.verdict == "fail"]
    drifts = [line(b, 1, drift_factor, "drift") for b in parts if b.verdict == "drift"]
    return fails, drifts


def rises_at(parts: Sequence[PositionBucket]) -> Optional[PositionBucket]:
    """The first bucket judged drift or fail: where the KL rises."""
    return next((b for b in parts if b.verdict in ("drift", "fail")), None)


def describe(parts: Sequence[PositionBucket]) -> str:
    """One line for the printed failure: every bucket's ratio, and where the KL rises."""
    shown = ", ".join(f"{b.start}-{b.end}: {b.kl_ratio:.1f}x ({b.positions})" for b in parts)
    first = rises_at(parts)
    where = f"; rises at positions {first.start}-{first.end}" if first is not None else ""
    return f"  KL by position (x floor, positions): {shown}{where}"
