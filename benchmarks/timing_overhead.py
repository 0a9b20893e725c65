"""Per-token timing overhead of the harness against a bare ``model.generate`` loop, same run.

Both sides generate the same greedy tokens from the same loaded model; rounds alternate between
them (A B A B ...) so machine noise hits both alike. The figure is the ratio of median end-to-end
generation times: harness (``HFAdapter.generate`` with its per-step clock) / bare ``generate``.

    python benchmarks/timing_overhead.py [--model gemma3-270m] [--rounds 15] [--tokens 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from harness.adapters.base import LoadSettings
from harness.adapters.hf import HFAdapter
from harness.models import prompts, sources
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    import torch

    model = sources.resolve(ModelSpec(source=args.model))
    point = Point(adapter="hf", device="cpu", prompt_len=args.prompt_len, id="bench")
    adapter = HFAdapter()
    adapter.load(model, point, LoadSettings(dtype="bf16", threads=args.threads))
    ids = prompts.synthetic(model.tokenizer(), args.prompt_len, 1)[0]
    input_ids = torch.tensor([ids])

    def bare() -> float:
        with torch.inference_mode():
            start = time.perf_counter_ns()
            adapter.model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=args.tokens,
                min_new_tokens=args.tokens,
                do_sample=False,
            )
            return (time.perf_counter_ns() - start) / 1e6

    def harness() -> float:
        trace = adapter.generate([ids], args.tokens)
        return (trace.token_ns[-1] - trace.start_ns) / 1e6

    bare(), harness()  # warm-up, untimed
    bare_ms, harness_ms = [], []
    for _ in range(args.rounds):
        bare_ms.append(bare())
        harness_ms.append(harness())
    ratios = [h / b for h, b in zip(harness_ms, bare_ms)]
    figures = {
        "model": args.model,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "bare_e2e_ms_median": statistics.median(bare_ms),
        "harness_e2e_ms_median": statistics.median(harness_ms),
        "ratio_of_medians": statistics.median(harness_ms) / statistics.median(bare_ms),
        "median_of_paired_ratios": statistics.median(ratios),
        "bare_ms_per_token": statistics.median(bare_ms) / args.tokens,
    }
    print("| model | tokens | rounds | bare e2e ms (median) | harness e2e ms (median) | overhead |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {args.model} | {args.tokens} | {args.rounds} | {figures['bare_e2e_ms_median']:.1f} | "
        f"{figures['harness_e2e_ms_median']:.1f} | {100 * (figures['median_of_paired_ratios'] - 1):+.2f} % |"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
