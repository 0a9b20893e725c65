"""Task-accuracy scoring cost: one-pass ``Adapter.score`` vs prefill + one decode per token, on the same
log-likelihood requests of the shipped tasks, alternately; also checks both give the same numbers.

    python benchmarks/accuracy_scoring.py [--model gemma3-270m] [--adapter openvino] [--items 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from harness.accuracy import evaluate
from harness.run.point_lm import PointLM


class _Request:
    def __init__(self, *args):
        self.args = args


def requests(items: int) -> list[_Request]:
    sys.path.insert(0, str(evaluate.TASKS_DIR))
    import loader

    out = [_Request(row["context"], row["target"]) for row in loader.cloze()["test"].select(range(items))]
    for row in loader.choice()["test"].select(range(items)):
        out += [_Request(row["query"], " " + choice) for choice in row["choices"]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--adapter", default="openvino")
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--items", type=int, default=20, help="items per task")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    device = args.device or ("CPU" if args.adapter == "openvino" else "cpu")
    lm = PointLM(model=args.model, adapter=args.adapter, device=device, dtype=args.dtype, threads=2)
    batch = requests(args.items)
    one_pass = lm.adapter.supports_score
    times = {"one_pass": [], "stepwise": []}
    results = {}
    for _ in range(args.rounds):
        for name, flag in (("one_pass", one_pass), ("stepwise", False)):
            lm.adapter.supports_score = flag  # without one-pass scoring, prefill + one decode per token
            start = time.perf_counter()
            results[name] = lm.loglikelihood(batch)
            times[name].append(time.perf_counter() - start)
    diff = max(abs(a[0] - b[0]) for a, b in zip(results["one_pass"], results["stepwise"]))
    same_greedy = all(a[1] == b[1] for a, b in zip(results["one_pass"], results["stepwise"]))
    one, step = statistics.median(times["one_pass"]), statistics.median(times["stepwise"])
    print(f"{args.model} on {args.adapter}:{device}, {len(batch)} requests, {args.rounds} alternating rounds")
    print(
        f"one pass: {one:.2f} s ({one / len(batch) * 1e3:.1f} ms/request); stepwise: {step:.2f} s "
        f"({step / len(batch) * 1e3:.1f} ms/request); speed-up {step / one:.2f}x"
    )
    print(
        f"largest log-likelihood difference {diff:.2e}; greedy flags identical: {same_greedy}; "
        f"mean log-likelihood {np.mean([r[0] for r in results['one_pass']]):.3f}"
    )


if __name__ == "__main__":
    main()
