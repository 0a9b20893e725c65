"""Synthetic result records for report and regression-check tests: ``record`` with real structure (rounds
of per-token gaps), ``launch_record`` with launch entries only (what the regression check reads), and
``noise_night``: the two sides of a night where nothing changed, drawn from those."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from harness.measure.rounds import Round, summarize
from harness.records.record import Record
from harness.records.samples import Launch, Samples

AXES = dict(
    adapter="hf",
    device="cpu",
    max_seq_len=None,
    quantization="none",
    prompt_len=None,
    beam_width=1,
    batch_size=1,
    moe_chunk_size=None,
)


def rounds(tpot_ms: float, ttft_ms: float, seed: int, n_rounds: int = 5, tokens: int = 32, jitter: float = 0.01):
    """Rounds that scatter by ``jitter`` (relative) around ``tpot_ms``: the whole round (a busy
    neighbour slows every step of it) plus a little per-token noise."""
    rng = random.Random(seed)
    out = []
    for index in range(n_rounds):
        scale = 1 + rng.uniform(-jitter, jitter)
        ttft = ttft_ms / 1e3 * scale
        gaps = tuple(tpot_ms / 1e3 * scale * (1 + rng.uniform(-0.01, 0.01)) for _ in range(tokens - 1))
        out.append(Round(index % 2, 32, 1, ttft, gaps, ttft + sum(gaps)))
    return out


def record(
    point_id: str = "hf-cpu-bf16",
    scenario: str = "demo",
    tpot_ms: float = 50.0,
    ttft_ms: float = 200.0,
    seed: int = 0,
    jitter: float = 0.01,
    verdict: str | None = "pass",
    status: str = "ok",
    energy_per_token_mj: float | None = None,
    outputs: dict | None = None,
    **axes,
) -> Record:
    point = {**AXES, **axes}
    if status != "ok":
        return Record(
            scenario=scenario,
            point_id=point_id,
            point=point,
            status=status,
            reason=f"it {status}",
            environment={"hostname": "test-host"},
        )
    timed = rounds(tpot_ms, ttft_ms, seed, jitter=jitter)
    metrics = summarize(timed)
    metrics["energy_per_token_mj"] = energy_per_token_mj
    correctness = (
        {}
        if verdict is None
        else {
            "verdict": verdict,
            "k": 5,
            "mode": "both",
            "top1_match_rate": 1.0 if verdict == "pass" else 0.4,
            "kl_mean": 1e-3,
            "kl_ratio": 1.0 if verdict == "pass" else 300.0,
            "free_divergence_index": None,
            "reasons": [] if verdict == "pass" else ["reference token 17 not in device top-5 at prompt 0 position 3"],
            "failed_by": ["top-k agreement"] if verdict == "fail" else [],
        }
    )
    return Record(
        scenario=scenario,
        point_id=point_id,
        point=point,
        status="ok",
        metrics=metrics,
        samples={"rounds": [r.to_dict() for r in timed]},
        correctness=correctness,
        model={"name": "tiny", "checksum": "abc"},
        engine={"name": "transformers", "version": "5"},
        outputs=outputs or {"0": "a plain output"},
        environment={"hostname": "test-host"},
    )


def launch_record(
    *values: float,
    metric: str = "tpot_ms",
    point_id: str = "p",
    scenario: str = "demo",
    excluded: Sequence[int] = (),
    also: dict[str, Sequence[float]] | None = None,
    **fields,
) -> Record:
    """A point measured by one launch per value of ``metric`` (its launch median; ``also`` gives other
    metrics' per-launch medians), with launch entries only: the regression check reads launch medians, and
    simulations build thousands of these. The launches at the indices in ``excluded`` are left out by the
    canary; the record's metric is the median over its launches, as ``measure.launches.combine`` makes it."""
    medians = {metric: values, **(also or {})}
    entries = [
        Launch(
            index=i,
            medians={name: series[i] for name, series in medians.items()},
            rounds=5,
            excluded="canary moved" if i in excluded else None,
        )
        for i in range(len(values))
    ]
    metrics = {name: statistics.median(series) for name, series in medians.items()}
    return Record(
        scenario=scenario,
        point_id=point_id,
        point={},
        status="ok",
        metrics=metrics,
        samples=Samples(launches=entries),
        **fields,
    )


def recombined(record: Record) -> Record:
    """``record`` after a test edited its launches' medians: its launch figures (``metrics.LAUNCH``) and their
    intervals recomputed from its ok launches as ``measure.launch_stats.combine`` makes them, so it stays a
    record a run could have written (readers refuse a median outside its launches' range)."""
    from harness.measure.launch_stats import intervals
    from harness.records.metrics import LAUNCH

    ok = [entry for entry in record.samples.launches if entry.status == "ok"]
    metrics = dict(record.metrics)
    for name in LAUNCH:
        values = [entry.medians[name] for entry in ok if entry.medians.get(name) is not None]
        if values:
            metrics[name] = statistics.median(values)
    found = intervals(record.samples.launches, record.samples.rounds)
    return record.model_copy(
        update={"metrics": metrics, "samples": record.samples.model_copy(update={"intervals": found})}
    )


def lognormal(rng: random.Random, median: float, cv: float, n: int) -> list[float]:
    """``n`` draws around ``median`` with coefficient of variation ``cv`` (launch-to-launch noise)."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    return [median * rng.lognormvariate(0, sigma) for _ in range(n)]


def noise_night(
    rng: random.Random, points: int = 10, cv: float = 0.08, launches: int = 5
) -> tuple[list[Record], list[Record]]:
    """A baseline and a candidate drawn from the same distributions: ``points`` points, each with TPOT
    (40 ms + 1 ms per point) and TTFT (200 ms) at launch-to-launch CV ``cv``, ``launches`` launches a side.
    Any regression the check finds here is a false alarm."""

    def side() -> list[Record]:
        return [
            launch_record(
                *lognormal(rng, 40.0 + i, cv, launches),
                point_id=f"p{i}",
                also={"ttft_ms": lognormal(rng, 200.0, cv, launches)},
            )
            for i in range(points)
        ]

    return side(), side()
