"""Cost of the gate's HF reference: first computation (bf16 greedy + fp32 noise floor) vs reuse.

python benchmarks/reference_cost.py [--model gemma3-270m] [--prompts ci|all|N] [--tokens 32]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from harness.correctness.reference import ReferenceSettings, ReferenceStore
from harness.models import sources
from harness.models.prompts import select_gate_prompts
from harness.scenario.schema import ModelSpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--prompts", default="ci")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--reuse-rounds", type=int, default=5)
    args = parser.parse_args()
    selection = int(args.prompts) if args.prompts.isdigit() else args.prompts

    model = sources.resolve(ModelSpec(source=args.model))
    pairs = select_gate_prompts(selection)
    settings = ReferenceSettings(tokens=args.tokens, threads=2)
    with tempfile.TemporaryDirectory() as root:
        store = ReferenceStore(Path(root))
        start = time.perf_counter()
        reference, path, reused = store.get_or_compute(model, pairs, settings)
        first_s = time.perf_counter() - start
        assert not reused
        reuse_s = []
        for _ in range(args.reuse_rounds):
            start = time.perf_counter()
            _, _, reused = store.get_or_compute(model, pairs, settings)
            reuse_s.append(time.perf_counter() - start)
            assert reused
        size_kb = path.stat().st_size / 1024
    reuse = statistics.median(reuse_s)
    print("| model | prompts x tokens | first run s | reused s (median) | speed-up | file KiB |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.model} | {len(pairs)} x {args.tokens} | {first_s:.1f} | {reuse:.2f} | {first_s / reuse:.0f}x | {size_kb:.0f} |"
    )


if __name__ == "__main__":
    main()
