"""Power of the regression check: false alarms on A/A nights, detection of +5 % and +10 % slowdowns on A/B
nights, for the old rule (one launch per point, threshold and per-round spread) and the new one (launches,
Mann-Whitney U, Benjamini-Hochberg), measured side by side in one run.

    python benchmarks/regression_power.py [--launches 8] [--nights 200] [--long]

The points are the quickstart's and cpu_runtimes' (prompt 32; ``--long`` adds 1024) on transformers and
llama.cpp, each as three builds of benchmarks/slowdown.py: unchanged (A), +5 % and +10 % per decode step.
One sweep runs every build of every point ``--launches`` times, launches interleaved round-robin by the
runner, so the machine's drift over the run touches every build alike. A night is then drawn from those
launches: an A/A night splits A's launches into a baseline and a candidate that share none (any red point
is a false alarm); an A/B night takes the baseline from A and the candidate from a slowed build (red =
detected). The old rule compares one launch with one; the new rule 5 launches with 5
(``measurement.launches: 5``). Nights are resampled from the pool (seeded), so different nights share
launches: the rates estimate what independent nights would give on this machine; they are not
independent nights.
The correctness gate is left out of these scenarios: it is not what is measured here.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.adapters import registry
from harness.measure import launch_stats
from harness.records import store
from harness.records.record import Record, launch_values, recorded_launches
from harness.regression import check
from harness.regression.thresholds import DEFAULT_FDR, DEFAULT_THRESHOLDS, parse_thresholds
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.schema import Scenario
from harness.scenario.sweep import expand

ROOT = Path(__file__).resolve().parent.parent
ENGINES = {"hf": "hf", "llamacpp": "llamacpp"}  # scenario adapter -> slowdown variant prefix
BUILDS = ("slow0", "slow5", "slow10")
NIGHT_LAUNCHES = 5


def scenarios(launches: int, long: bool) -> list[Scenario]:
    out = []
    for name in ("quickstart", "cpu_runtimes"):
        loaded = planning.load(ROOT / "scenarios" / f"{name}.yaml")
        lengths = sorted(
            {p.prompt_len for p in expand(loaded) if p.adapter in ENGINES and (long or p.prompt_len != 1024)},
            key=lambda n: n or 0,
        )
        sweep = {"adapter": [f"{engine}-{build}" for engine in ENGINES.values() for build in BUILDS], "device": ["cpu"]}
        if lengths != [None]:
            sweep["prompt_len"] = lengths
        data = loaded.model_dump(mode="json", exclude={"gate", "sweep", "include"})
        data["measurement"]["launches"] = launches
        out.append(Scenario.model_validate({**data, "sweep": sweep}))
    return out


QUICK_BUILDS = ("slow0", "slow5", "slow10", "slow25", "slow50", "slow100")


def quick_scenarios(launches: int) -> list[Scenario]:
    """``--quick``: the tests' tiny seeded model on transformers, one thread, every build of ``QUICK_BUILDS``."""
    data = {
        "name": "power_quick",
        "model": "tiny-llama",
        "prompts": ["The river flows past the old mill and"],
        "generation": {"max_new_tokens": 16},
        "measurement": {"warmup_rounds": 1, "min_rounds": 5, "threads": 1, "launches": launches},
        "sweep": {"adapter": [f"hfq-{build}" for build in QUICK_BUILDS], "device": ["cpu"]},
    }
    return [Scenario.model_validate(data)]


def subset(record: Record, chosen: list[int]) -> Record:
    """The record as if only the ``chosen`` launches had run."""
    kept = [recorded_launches(record)[i].model_copy(update={"index": n}) for n, i in enumerate(chosen)]
    remap = {i: n for n, i in enumerate(chosen)}
    rounds = [r.model_copy(update={"launch": remap[r.launch]}) for r in record.samples.rounds if r.launch in remap]
    return with_launches(record, kept, rounds)


def with_launches(record: Record, kept: list, rounds: list | None = None) -> Record:
    """The record with these launches (and rounds), its metrics and intervals recomputed from them."""
    intervals = launch_stats.intervals(kept)
    parts = (
        dict(launches=kept, intervals=intervals)
        if rounds is None
        else dict(rounds=rounds, launches=kept, intervals=intervals)
    )
    return record.model_copy(
        update=dict(
            metrics={**record.metrics, **{m: i.estimate for m, i in intervals.items()}},
            samples=record.samples.model_copy(update=parts),
        )
    )


def as_build(record: Record, build: str) -> Record:
    """The record renamed to the baseline build's point id, so the regression check pairs the two builds."""
    return record.model_copy(update={"point_id": record.point_id.replace(build, "slow0")})


@dataclass
class Night:
    """One resampled night's outcome: red or not, and the three-outcome verdicts of its tests."""

    red: bool
    verdicts: dict[str, int]  # different (worse) / different (better) / same / unknown: tests of the night
    tpot: list  # the tpot_ms launch-level tests (harness.regression.outcome.MetricTest)


def night(pool: dict, build: str, launches: int, rng: random.Random, fdr: float) -> Night:
    """The regression check of one night: candidate ``build`` against the baseline build (A/A when slow0)."""
    thresholds = parse_thresholds(DEFAULT_THRESHOLDS)
    base, new = [], []
    for builds in pool.values():
        a, b = builds["slow0"], builds[build]
        drawn = rng.sample(range(len(recorded_launches(a))), 2 * launches if build == "slow0" else launches)
        base.append(subset(a, drawn[:launches]))
        if build == "slow0":  # A/A: the candidate is A's other launches
            new.append(subset(a, drawn[launches:]))
        else:
            new.append(as_build(subset(b, rng.sample(range(len(recorded_launches(b))), launches)), build))
    outcome = check.check(base, new, thresholds, fdr=fdr)
    words = {"different (worse)": 0, "different (better)": 0, "same": 0, "unknown": 0}
    for test in outcome.tests:
        word = (
            test.verdict if test.verdict != "different" else f"different ({'worse' if test.change > 0 else 'better'})"
        )
        words[word] += 1
    return Night(not outcome.passed, words, [t for t in outcome.tests if t.metric == "tpot_ms"])


def verdict_rows(pool: dict, builds: tuple, per_side: int, nights: int, rng: random.Random, fdr: float) -> None:
    """The three-outcome table (issue 30): per build, red nights, the verdicts' shares, the reported
    detectable change of tpot against the detection measured, and the detection the simulation predicts."""
    import statistics

    from harness.regression import launch_power

    nominal = {build: int(build.removeprefix("slow")) / 100 for build in builds}
    # The change each build really made on this machine: the median over all its launches against A's (the
    # delay is a fraction of the token period, but the period on a busy machine is not the engine's alone).
    pooled = {
        build: statistics.median([statistics.median(launch_values(b[build], "tpot_ms")) for b in pool.values()])
        for build in builds
    }
    shift = {build: max(0.0, pooled[build] / pooled["slow0"] - 1) for build in builds}
    results = {build: [night(pool, build, per_side, rng, fdr) for _ in range(nights)] for build in builds}
    tests = sum(results["slow0"][0].verdicts.values())
    level = launch_power.alpha(fdr, tests)
    aa = [t for n in results["slow0"] for t in n.tpot]
    if not aa or any(t.cv is None for t in aa):
        print("\nthree-outcome verdicts: no launch-level tests (a night needs 2 launches a side)")
        return
    reported = reported_change(aa)
    cv = statistics.median(t.cv for t in aa)
    print(
        f"\nthree-outcome verdicts, {per_side} vs {per_side} launches, {nights} nights per build, {tests} tests a "
        f"night (lone-regression level {level:.3g}); tpot launch CV (median over A/A nights) {cv:.1%}; "
        f"reported detectable tpot change (median over A/A nights) "
        f"{'none' if reported is None else f'{reported:.1%}'}"
    )
    print(
        "| build | measured change | red nights | tpot different (worse) | predicted from the CV | tests: different "
        "| same | unknown |"
    )
    print("|---|---|---|---|---|---|---|---|")
    detected = {}
    for build in builds:
        found = results[build]
        detected[build] = sum(any(t.verdict == "different" and t.change > 0 for t in n.tpot) for n in found) / nights
        total = sum(sum(n.verdicts.values()) for n in found) or 1
        share = {word: sum(n.verdicts[word] for n in found) / total for word in found[0].verdicts}
        predicted = (
            launch_power.detection_rate(cv, shift[build], per_side, per_side, level, 0.05) if shift[build] else 0.0
        )
        red = sum(n.red for n in found)
        print(
            f"| +{nominal[build]:.0%} | {shift[build]:+.1%} | {red / nights:.1%} ({red} of {nights}) "
            f"| {detected[build]:.1%} | {predicted:.1%} "
            f"| {share['different (worse)'] + share['different (better)']:.1%} | {share['same']:.1%} "
            f"| {share['unknown']:.1%} |"
        )
    reached = _where_80(shift, detected)
    if reported is not None and reached is not None:
        verdict = "met" if abs(reached / reported - 1) <= 0.25 else "NOT met"
        print(
            f"\ndetection reaches 80 % at a measured change of about +{reached:.0%} (linear between the builds); reported "
            f"{reported:.0%}: {reached / reported - 1:+.0%} ({verdict}, target +-25 %)"
        )
    else:
        print(
            f"\ndetection never reaches 80 % among the builds (up to +{max(shift.values()):.0%}); reported {reported}"
        )


def reported_change(tests: list) -> float | None:
    """The detectable change the check reported, as the median over A/A nights' tests; a night whose launches
    cannot reach the significance level reports none and counts as infinite (None: most nights did)."""
    import statistics

    if not tests:
        return None
    middle = statistics.median(t.detectable if t.detectable is not None else float("inf") for t in tests)
    return None if middle == float("inf") else middle


def _where_80(shift: dict, detected: dict):
    """The change where measured detection first reaches 80 %, linear between neighbouring builds."""
    points = sorted((shift[b], detected[b]) for b in shift)
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y1 >= 0.8 > y0:
            return x0 + (0.8 - y0) / (y1 - y0) * (x1 - x0)
    return points[0][0] if points and points[0][1] >= 0.8 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--launches", type=int, default=10, help="launches per build and point (the pool; A/A nights need 2 x 5 of A's)"
    )
    parser.add_argument("--nights", type=int, default=200, help="nights resampled per comparison")
    parser.add_argument("--long", action="store_true", help="add cpu_runtimes' 1024-token prompts")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the tests' tiny model on transformers with +0/5/10/25/50/100 %% builds, launches in-process "
        "(minutes, not half an hour): the three-outcome verdicts and the detectable change against detection",
    )
    parser.add_argument("--fdr", type=float, default=DEFAULT_FDR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="keep the sweep's records here; with --reuse, judge records already there",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="do not run: resample nights from the records already in --results"
    )
    args = parser.parse_args()
    import slowdown

    for cls in slowdown.VARIANTS.values():
        registry.register_adapter(cls)
    start = time.perf_counter()
    if args.reuse:
        if args.results is None:
            sys.exit("--reuse needs --results DIR")
        records = [
            r
            for _, r in store.iter_records(args.results)
            if r.scenario in ("quickstart", "cpu_runtimes", "power_quick")
        ]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            isolation = "none" if args.quick else "worker"
            runner = Runner(RunSettings(results_dir=args.results or Path(tmp), isolation=isolation, energy=False))
            records = runner.run(quick_scenarios(args.launches) if args.quick else scenarios(args.launches, args.long))
    wall = time.perf_counter() - start
    bad = [f"{r.point_id}: {r.reason}" for r in records if r.status != "ok"]
    if bad:
        sys.exit("points failed:\n" + "\n".join(bad))
    pool: dict = {}
    for record in records:
        adapter = record.point["adapter"]
        build = adapter.rsplit("-", 1)[1]
        pool.setdefault((record.scenario, record.point_id.replace(build, "slow0")), {})[build] = record
    rng = random.Random(args.seed)
    # Device time of one side of a night: every point's mean launch cost (all of it: start, load, rounds).
    per_launch = sum(
        sum(builds["slow0"].time_split.model_dump().values()) / len(recorded_launches(builds["slow0"]))
        for builds in pool.values()
    )
    # A/A nights take two disjoint halves of A's launches: a partial pool (an interrupted run) gives fewer.
    fewest = min(len(recorded_launches(r)) for builds in pool.values() for r in builds.values())
    per_side = min(NIGHT_LAUNCHES, fewest // 2)
    if per_side < 1:
        sys.exit(f"A/A nights need at least 2 launches of every build and point; the pool has {fewest}")
    rows = []
    for rule, launches in (("old: 1 launch, threshold + spread", 1), (f"new: {per_side} launches, MWU + BH", per_side)):
        rates = {
            build: sum(night(pool, build, launches, rng, args.fdr).red for _ in range(args.nights)) / args.nights
            for build in ("slow0", "slow5", "slow10")
        }
        rows.append((rule, rates, launches * per_launch))
    points = len(pool)
    print(
        f"{points} points x 3 builds x {fewest}+ launches ({wall / 60:.1f} min); "
        f"{args.nights} resampled nights per comparison; default thresholds {DEFAULT_THRESHOLDS}; "
        f"FDR {args.fdr:g}"
    )
    print("| rule | false-alarm nights (A/A) | +5 % detected | +10 % detected | device time per night |")
    print("|---|---|---|---|---|")
    for rule, rates, seconds in rows:
        print(
            f"| {rule} | {rates['slow0']:.1%} ({rates['slow0'] * 20:.1f} in 20) | {rates['slow5']:.1%} "
            f"({rates['slow5'] * 20:.1f} in 20) | {rates['slow10']:.1%} ({rates['slow10'] * 20:.1f} in 20) "
            f"| {seconds:.0f} s |"
        )
    tests = len(pool) * 2  # tpot and ttft per point (no energy meter here)
    alpha = args.fdr * len(pool) / tests  # BH's bar when every point's tpot regressed, as in these nights
    print(
        f"\nlaunch-to-launch CV of tpot per point (A build), and the launches per side a point would need to show "
        f"a slowdown with 95 % power (one-sided alpha {alpha:g}: BH's bar when all {len(pool)} points regress):"
    )
    for (scenario, point_id), builds in pool.items():
        interval = builds["slow0"].samples.intervals.get("tpot_ms")
        if interval is not None and interval.cv is not None:
            need = {shift: launches_needed(interval.cv, shift, alpha) for shift in (0.05, 0.10)}
            print(
                f"  {scenario}::{point_id}: CV {interval.cv:.1%} over {interval.launches} launches, median "
                f"{interval.estimate:.2f} ms; needs ~{need[0.10]} launches a side for +10 %, ~{need[0.05]} for +5 %"
            )

    if args.quick:
        builds = tuple(b for b in QUICK_BUILDS if all(b in found for found in pool.values()))
        verdict_rows(pool, builds, per_side, args.nights, rng, args.fdr)
        scaled_rows(pool, per_side, args.nights, rng, args.fdr)
        canary_rows(pool, builds)


SCALES = (0.05, 0.10, 0.20, 0.30, 0.50, 0.75, 1.00, 1.50, 2.00)


def scaled(record: Record, factor: float) -> Record:
    """The record with every launch's ms/token multiplied by ``factor``: a slowdown of exactly known size on
    this machine's own launch-to-launch noise (the slowed builds' real change is itself blurred by that noise)."""
    kept = [
        launch.model_copy(
            update={
                "medians": {**launch.medians, "tpot_ms": launch.medians["tpot_ms"] * factor}
                if launch.medians.get("tpot_ms") is not None
                else launch.medians,
                "excluded": None,
            }
        )
        for launch in recorded_launches(record)
    ]
    return with_launches(record, kept)


def scaled_rows(pool: dict, per_side: int, nights: int, rng: random.Random, fdr: float) -> None:
    """Reported detectable change against achieved detection, on nights whose candidate is A's other launches
    slowed by an exact factor: the check the power figure promises ("a change this size is found 80 % of the
    time at these launches"), with the machine's real launch distribution and no doubt about the true change.
    Canary exclusions are cleared here (every drawn launch is tested): what is checked is the statistic at a
    known number of launches; how many launches the canary leaves is reported by ``canary_rows``."""

    thresholds = parse_thresholds(DEFAULT_THRESHOLDS)
    reported, curve = [], {}
    for scale in (0.0, *SCALES):
        found = 0
        for _ in range(nights):
            base, new = [], []
            for builds in pool.values():
                a = builds["slow0"]
                drawn = rng.sample(range(len(recorded_launches(a))), 2 * per_side)
                base.append(scaled(subset(a, drawn[:per_side]), 1.0))
                new.append(scaled(subset(a, drawn[per_side:]), 1 + scale))
            outcome = check.check(base, new, thresholds, fdr=fdr)
            tpot = [t for t in outcome.tests if t.metric == "tpot_ms"]
            found += any(t.verdict == "different" and t.change > 0 for t in tpot)
            if scale == 0.0:
                reported += tpot
        curve[scale] = found / nights
    mdc = reported_change(reported)
    print(
        f"\nexactly scaled A/B nights ({per_side} vs {per_side} of A's launches, candidate's ms/token x (1 + change), "
        f"{nights} nights each): reported detectable change (median over the A/A nights) "
        f"{'none' if mdc is None else f'{mdc:.1%}'}"
    )
    print("| change | " + " | ".join(f"{s:+.0%}" for s in curve) + " |")
    print("|---|" + "---|" * len(curve))
    print("| tpot different (worse) | " + " | ".join(f"{v:.0%}" for v in curve.values()) + " |")
    reached = _where_80({s: s for s in curve}, curve)
    if mdc is not None and reached is not None:
        verdict = "met" if abs(reached / mdc - 1) <= 0.25 else "NOT met"
        print(
            f"detection reaches 80 % at about +{reached:.0%} (linear between changes); reported +{mdc:.0%}: "
            f"{reached / mdc - 1:+.0%} ({verdict}, target +-25 %)"
        )
    else:
        print(f"detection never reaches 80 % up to +{max(curve):.0%}; reported {mdc}")


def canary_rows(pool: dict, builds: tuple) -> None:
    """The canary against launch slowdowns (issue 30): every launch's canary ratio beside its TPOT over its
    build's median (1.10 = this launch ran 10 % slower than its build usually does), pooled over builds so the
    builds' own delays do not count as machine slowdowns; Pearson and Spearman correlation, and how many launches
    the canary marked disturbed."""
    import statistics

    from scipy.stats import pearsonr, spearmanr

    ratios, slowdowns, excluded = [], [], 0
    for builds_of_point in pool.values():
        for build in builds:
            record = builds_of_point[build]
            launches = [x for x in recorded_launches(record) if x.status == "ok" and x.medians.get("tpot_ms")]
            if not launches:
                continue
            middle = statistics.median(launch.medians["tpot_ms"] for launch in launches)
            for launch in launches:
                excluded += launch.excluded is not None
                if launch.canary is not None:
                    ratios.append(launch.canary.ratio)
                    slowdowns.append(launch.medians["tpot_ms"] / middle)
    if len(ratios) < 3:
        print("\ncanary: fewer than 3 launches ran the canary")
        return
    r, r_p = pearsonr(ratios, slowdowns)
    rho, rho_p = spearmanr(ratios, slowdowns)
    print(
        f"\ncanary vs launch slowdown over {len(ratios)} launches: Pearson r {r:.2f} (p {r_p:.2g}), Spearman rho "
        f"{rho:.2f} (p {rho_p:.2g}); canary ratio median {statistics.median(ratios):.2f} (range "
        f"{min(ratios):.2f}-{max(ratios):.2f}), launch TPOT over its build's median {min(slowdowns):.2f}-"
        f"{max(slowdowns):.2f}; {excluded} launches marked disturbed"
    )


def launches_needed(cv: float, shift: float, alpha: float, power: float = 0.95) -> int:
    """Normal-approximation sample size of a one-sided two-sample test, divided by Mann-Whitney's asymptotic
    relative efficiency (3/pi against the t-test for normal data)."""
    import math

    from scipy.stats import norm

    n = 2 * ((norm.ppf(1 - alpha) + norm.ppf(power)) * cv / shift) ** 2
    return max(2, math.ceil(n / (3 / math.pi)))


if __name__ == "__main__":
    main()
