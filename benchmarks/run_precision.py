"""Run-to-run precision: the coefficient of variation of ms/token over repeated runs of one point.

    python benchmarks/run_precision.py [--adapter hf] [--runs 6]

Each run is a full point (load, warm-up, timed rounds) in this process; the figure is the spread
of the runs' median ms/token, which is what a nightly comparison sees from one night to the next.
"""

from __future__ import annotations

import argparse
import statistics

from common import single_point

from harness.run.runner import Runner
from harness.run.settings import RunSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--adapter", default="hf")
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    loaded, point = single_point(args.model, args.adapter, max_new_tokens=32, min_rounds=3)
    runner = Runner(RunSettings(results_dir=None, energy=False))
    tpots = []
    for _ in range(args.runs):
        record = runner.run_point(loaded, point)
        if record.status != "ok":
            raise SystemExit(f"{point.id}: {record.status}: {record.reason}")
        tpots.append(record.metrics["tpot_ms"])
    cv = statistics.stdev(tpots) / statistics.fmean(tpots)
    print(
        f"| {args.model} | {args.adapter} | {args.runs} | {statistics.median(tpots):.2f} | "
        f"{min(tpots):.2f}-{max(tpots):.2f} | {cv:.1%} |"
    )


if __name__ == "__main__":
    main()
