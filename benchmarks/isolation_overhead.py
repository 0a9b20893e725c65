"""Per-point cost of process isolation: the same point run in-process, in the sweep's persistent worker
and in a process of its own, alternately.

    python benchmarks/isolation_overhead.py [--model tiny-llama] [--rounds 5]

A process per point pays for a Python start, the engine's import and the model's resolution that an
in-process sweep shares between points; a persistent worker pays them once per group of points, then
only the hand-over of the job and the record. The figures are median wall times per point.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import single_point

from harness.run.runner import Runner
from harness.run.settings import RunSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--adapter", default="hf")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    loaded, point = single_point(args.model, args.adapter, max_new_tokens=8, min_rounds=2)
    runners = {mode: Runner(RunSettings(results_dir=None, isolation=mode)) for mode in ("none", "worker", "point")}
    for runner in runners.values():  # first use pays conversions, imports and the worker's start; not counted
        runner.run_point(loaded, point)
    times: dict[str, list[float]] = {mode: [] for mode in runners}
    tpot: dict[str, list[float]] = {mode: [] for mode in runners}  # the worker reuses its engine: same figures?
    try:
        for _ in range(args.rounds):
            for mode, runner in runners.items():
                start = time.perf_counter()
                record = runner.run_point(loaded, point)
                times[mode].append(time.perf_counter() - start)
                assert record.status == "ok", record.reason
                tpot[mode].append(record.metrics["tpot_ms"])
    finally:
        for runner in runners.values():
            runner.close()
    inline, worker, own = (statistics.median(times[mode]) for mode in ("none", "worker", "point"))
    print(
        "| model | adapter | rounds | in-process s/point | persistent worker s/point | process per point s/point "
        "| worker overhead s/point | process-per-point overhead s/point |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.model} | {args.adapter} | {args.rounds} | {inline:.2f} | {worker:.2f} | {own:.2f} "
        f"| {worker - inline:+.2f} | {own - inline:+.2f} |"
    )
    print("\nms/token, median (min-max) over the rounds: engine reused by the worker vs loaded afresh per point")
    for mode, label in (
        ("worker", "persistent worker, engine reused"),
        ("point", "process per point, fresh load"),
        ("none", "in-process, fresh load"),
    ):
        print(f"  {label}: {statistics.median(tpot[mode]):.2f} ({min(tpot[mode]):.2f}-{max(tpot[mode]):.2f})")


if __name__ == "__main__":
    main()
