"""Statistics over independent launches of a point (issue #19): a launch's summary (with its drift check,
``harness.measure.drift``), the interval of a metric over launches and merging a point's launch records. Pure
functions of typed records; scipy and statsmodels load inside the functions, so ``import harness`` stays light.

Rounds within one process share its warm caches, clocks and neighbours, so they are correlated; the
unit of replication is the launch. Every figure here treats a launch's median as one observation.
"""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

from harness.measure.drift import drift
from harness.records.metrics import LAUNCH
from harness.records.record import Record, recorded_launches
from harness.records.samples import CanaryReading, Interval, Launch, TimeSplit

CONFIDENCE = 0.95
SEED = 0  # resampling is seeded: the same launches give the same interval every time
FAILED = ("failed", "timeout")


def launch(
    metrics: dict,
    rounds: Sequence,
    index: int = 0,
    machine: Optional[dict] = None,
    started_at: Optional[str] = None,
    wall_s: Optional[float] = None,
    status: str = "ok",
    reason: Optional[str] = None,
    canary: Optional[CanaryReading] = None,
    excluded: Optional[str] = None,
) -> Launch:
    """One launch's entry: its medians of ``metrics.LAUNCH`` (from the point's ``metrics``, which
    ``measure.summarize`` and the energy step filled from this launch's rounds), its round count and
    the drift of per-round TPOT. ``rounds`` are ``measure.Round`` or ``record.RoundSample``."""
    return Launch(
        index=index,
        status=status,
        reason=reason,
        rounds=len(rounds),
        medians={name: metrics[name] for name in LAUNCH if metrics.get(name) is not None},
        drift=drift(rounds),
        machine=machine or {},
        started_at=started_at,
        wall_s=wall_s,
        canary=canary,
        excluded=excluded,
    )


def interval(values: Sequence[Optional[float]], samples: int) -> Interval:
    """A metric over launches: the median of launch medians with a 95 % confidence interval. Five or
    more launches: a seeded percentile bootstrap of the median; two to four: Student's t interval (too few
    values to resample) of the log values when all are positive, back-transformed (``log-t``: a time or a
    rate never gets a lower end below zero, where a plain t interval of three spread launches read
    ``16.9 ± 77.19 ms``), else of the values (``t``); one: no interval. ``cv`` is the launch-to-launch
    stdev / mean."""
    data = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not data:
        raise ValueError("interval: expected at least one launch value, got none")
    estimate = statistics.median(data)
    if len(data) == 1:
        return Interval(estimate=estimate, launches=1, samples=samples, method="single launch")
    import numpy as np
    from scipy import stats  # not for a single launch: a run of one launch a point never imports it

    cv = float(stats.variation(data, ddof=1)) if statistics.fmean(data) else None
    if min(data) == max(data):  # no spread: scipy's intervals are undefined, the answer is not
        low = high = estimate
    elif len(data) >= 5:
        found = stats.bootstrap(
            (data,), np.median, confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(SEED)
        ).confidence_interval
        low, high = float(found.low), float(found.high)
    elif min(data) > 0:  # a positive quantity: its interval stays positive (log-normal launches)
        logs = [math.log(v) for v in data]
        found = stats.t.interval(CONFIDENCE, df=len(logs) - 1, loc=statistics.fmean(logs), scale=stats.sem(logs))
        low, high = (math.exp(float(x)) for x in found)
    else:
        low, high = (
            float(x)
            for x in stats.t.interval(CONFIDENCE, df=len(data) - 1, loc=statistics.fmean(data), scale=stats.sem(data))
        )
    return Interval(
        estimate=estimate,
        low=low,
        high=high,
        cv=cv,
        launches=len(data),
        samples=samples,
        method="bootstrap" if len(data) >= 5 else "log-t" if min(data) > 0 else "t",
    )


def rel_half_width(record: Record, metric: str = "tpot_ms") -> Optional[float]:
    """Half the 95 % interval over the estimate (0.02 = +-2 %), for adaptive stopping; None without an
    interval (one launch, or the metric not measured)."""
    found = record.samples.intervals.get(metric)
    if found is None or found.low is None or found.high is None or not found.estimate:
        return None
    return (found.high - found.low) / 2 / abs(found.estimate)


def _warmup_tokens(records: Sequence[Record]) -> list[int]:
    """Each warm-up's length beside ``warmup_s``; empty (not known) when a launch's record is older than the
    field, rather than a list that no longer lines up."""
    if any(len(r.samples.warmup_tokens) != len(r.samples.warmup_s) for r in records):
        return []
    return [n for r in records for n in r.samples.warmup_tokens]


def combine(records: Sequence[Record]) -> Record:
    """One record from a point's launch records, in launch order (records that already hold several
    launches are flattened). Launches are re-indexed 0..n-1 and rounds say which launch timed them;
    ``metrics.LAUNCH`` figures are medians of launch medians with intervals, other figures medians over
    the records with an ok launch. Parts that a launch does once (correctness, accuracy, outputs, model,
    adapter, environment, settings) come from the first record with an ok launch. A failed or timed-out
    launch makes the point failed (reason ``launch i of n: ...``) but the ok launches' data stay."""
    if not records:
        raise ValueError("combine: expected at least one record, got none")
    first = records[0]
    strangers = [
        f"{r.scenario}::{r.point_id}" for r in records if (r.scenario, r.point_id) != (first.scenario, first.point_id)
    ]
    if strangers:
        raise ValueError(f"combine: records of {first.scenario}::{first.point_id} expected, got {', '.join(strangers)}")
    if first.status == "skipped":
        return first  # decided before anything ran, so every launch would say the same
    launches: list[Launch] = []
    rounds: list = []
    owners: list = []
    for record in records:
        offset = len(launches)
        own = recorded_launches(record)
        ok = {entry.index for entry in own if entry.status == "ok"}
        rounds += [r.model_copy(update={"launch": offset + r.launch}) for r in record.samples.rounds if r.launch in ok]
        launches += [entry.model_copy(update={"index": offset + i}) for i, entry in enumerate(own)]
        owners += [record] * len(own)
    good = [r for r in records if any(e.status == "ok" for e in recorded_launches(r))]
    source = good[0] if good else first
    failed = next((i for i, entry in enumerate(launches) if entry.status in FAILED), None)
    status, reason, failure = "ok", None, None
    if failed is not None:
        status, failure = launches[failed].status, owners[failed].failure
        reason = (
            launches[failed].reason
            if len(launches) == 1
            else f"launch {failed + 1} of {len(launches)}: {launches[failed].reason}"
        )
    return source.model_copy(
        update=dict(
            point=first.point,
            settings=first.settings,
            scenario_path=first.scenario_path,
            status=status,
            reason=reason,
            failure=failure,
            metrics=_metrics(good or [first], launches),
            units={k: v for r in records for k, v in r.units.items()},
            samples=first.samples.model_copy(
                update=dict(
                    rounds=rounds,
                    warmup_s=[w for r in records for w in r.samples.warmup_s],
                    warmup_tokens=_warmup_tokens(records),
                    rounds_ms=_rounds_ms(records),
                    launches=launches,
                    intervals=intervals(launches, rounds),
                )
            ),
            time_split=_time_split(records),
            unavailable=_first_wins(r.unavailable for r in records),
            log=[line for r in records for line in r.log],
            started_at=first.started_at,
            finished_at=records[-1].finished_at,
        )
    )


def since(record: Record, first: int) -> Record:
    """The record restricted to its launches from index ``first`` on (re-indexed from 0): the fresh
    launches a ``harness gate --confirm`` rerun appended, tested apart from the ones that raised the
    alarm. Figures outside ``metrics.LAUNCH`` keep their values over all launches."""
    kept = [
        entry.model_copy(update={"index": entry.index - first})
        for entry in recorded_launches(record)
        if entry.index >= first
    ]
    failed = next((entry for entry in kept if entry.status in FAILED), None)
    metrics = _metrics([record], kept)
    rounds = [r.model_copy(update={"launch": r.launch - first}) for r in record.samples.rounds if r.launch >= first]
    return record.model_copy(
        update=dict(
            status=failed.status if failed else "ok",
            reason=failed.reason if failed else None,
            failure=record.failure if failed else None,
            metrics={**record.metrics, **metrics},
            samples=record.samples.model_copy(
                update=dict(
                    rounds=rounds,
                    launches=kept,
                    intervals=intervals(kept, rounds),
                )
            ),
        )
    )


def intervals(launches: Sequence[Launch], rounds: Sequence = ()) -> dict[str, Interval]:
    """An interval for every ``metrics.LAUNCH`` figure some ok launch measured, with the metric's variance
    components (``harness.measure.noise``) from the ok launches' ``rounds`` where it has per-round values.
    Launches excluded as disturbed count here: the figures show everything measured; only the regression
    check leaves them out."""
    from harness.measure import noise

    out = {}
    for name in LAUNCH:
        having = [e for e in launches if e.status == "ok" and e.medians.get(name) is not None]
        if having:
            out[name] = interval([e.medians[name] for e in having], samples=sum(e.rounds for e in having))
            if name in noise.PER_ROUND and rounds:
                ok = {e.index for e in having}
                groups = [g for launch, g in noise.by_launch(rounds, name).items() if launch in ok]
                within, between = noise.components(groups)
                per_launch = statistics.harmonic_mean([len(g) for g in groups]) if groups else None
                out[name] = out[name].model_copy(
                    update=dict(within_cv=within, between_cv=between, rounds_per_launch=per_launch)
                )
    return out


def _metrics(good: Sequence[Record], launches: Sequence[Launch]) -> dict:
    ok = [e for e in launches if e.status == "ok"]
    names = dict.fromkeys(name for r in good for name in r.metrics)
    out: dict = {}
    for name in names:
        values = [float(v) for r in good if (v := r.metrics.get(name)) is not None]
        out[name] = statistics.median(values) if values else None
    for name in LAUNCH:  # a launch entry without the figure leaves the records' median in place
        values = [float(v) for e in ok if (v := e.medians.get(name)) is not None]
        if values:
            out[name] = statistics.median(values)
    return out


def _time_split(records: Sequence[Record]) -> Optional[TimeSplit]:
    parts = [r.time_split for r in records if r.time_split is not None]
    if not parts:
        return None
    return TimeSplit(**{name: sum(getattr(p, name) for p in parts) for name in TimeSplit.model_fields})


def _rounds_ms(records: Sequence[Record]) -> Optional[dict[str, list[float]]]:
    kept = [r.samples.rounds_ms for r in records if r.samples.rounds_ms is not None]
    if not kept:
        return None
    names = dict.fromkeys(name for part in kept for name in part)
    return {name: [v for part in kept for v in part.get(name, [])] for name in names}


def _first_wins(dicts) -> dict:
    out: dict = {}
    for part in dicts:
        for name, value in part.items():
            out.setdefault(name, value)
    return out
