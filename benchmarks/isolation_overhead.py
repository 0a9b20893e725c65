"""Per-point cost of process isolation: the same point run in-process and in a child, alternately.

    python benchmarks/isolation_overhead.py [--model tiny-llama] [--rounds 5]

The child pays for a Python start, the engine's import and the model load that an in-process sweep
shares between points; the figure is the median wall-time difference per point.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import single_point

from harness.runner import Runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--adapter", default="hf")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    loaded, point = single_point(args.model, args.adapter, max_new_tokens=8, min_rounds=2)
    inline, isolated = Runner(results_dir=None), Runner(results_dir=None, isolate=True)
    inline.run_point(loaded, point)  # first load pays conversions and imports; not counted
    times = {"in-process": [], "isolated": []}
    for _ in range(args.rounds):
        for name, runner in (("in-process", inline), ("isolated", isolated)):
            start = time.perf_counter()
            record = runner.run_point(loaded, point)
            times[name].append(time.perf_counter() - start)
            assert record.status == "ok", record.reason
    a, b = statistics.median(times["in-process"]), statistics.median(times["isolated"])
    print("| model | adapter | rounds | in-process s/point | isolated s/point | overhead s/point |")
    print("|---|---|---|---|---|---|")
    print(f"| {args.model} | {args.adapter} | {args.rounds} | {a:.2f} | {b:.2f} | {b - a:+.2f} |")


if __name__ == "__main__":
    main()
