"""Does tracking energy, CPU time and memory change ms/token? Same point, tracking on and off, alternately.

    python benchmarks/energy_overhead.py [--model gemma3-270m] [--pairs 3]

Tracking reads counters only at the edges of the timed window (never per token); with energy
sources present it also runs a separate prefill-only window after the timed rounds.
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
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    loaded, point = single_point(args.model)
    tracked, bare = (
        Runner(RunSettings(results_dir=None, energy=True)),
        Runner(RunSettings(results_dir=None, energy=False)),
    )
    tpot = {"on": [], "off": []}
    for _ in range(args.pairs):
        for name, runner in (("on", tracked), ("off", bare)):
            record = runner.run_point(loaded, point)
            assert record.status == "ok", record.reason
            tpot[name].append(record.metrics["tpot_ms"])
    on, off = statistics.median(tpot["on"]), statistics.median(tpot["off"])
    print("| model | pairs | ms/token tracking on | ms/token tracking off | change |")
    print("|---|---|---|---|---|")
    print(f"| {args.model} | {args.pairs} | {on:.2f} | {off:.2f} | {100 * (on / off - 1):+.2f} % |")


if __name__ == "__main__":
    main()
