"""Our per-token clock against llama.cpp's own perf counters, on the same generations.

    python benchmarks/llamacpp_timing.py [--model gemma3-270m] [--rounds 10]

Both figures come from the same generation: ours from host timestamps at each token the generator
yields, llama.cpp's from ``llama_perf_context`` (eval time / evals, prompt-eval time). Ours include
the greedy sampler over the vocabulary (262k entries for Gemma), which llama.cpp counts apart.
Ratios are ours / llama.cpp's; medians.
"""

from __future__ import annotations

import argparse
import statistics

from adapters.llamacpp import LlamaCppAdapter
from harness import models, prompts
from harness.adapter import LoadSettings
from harness.measure import Round
from harness.scenario import ModelSpec
from harness.sweep import Point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=32)
    args = parser.parse_args()

    model = models.resolve(ModelSpec(source=args.model))
    adapter = LlamaCppAdapter()
    point = Point("llamacpp", "cpu", None, "none", args.prompt_len, 1, 1, None, "bench")
    adapter.load(model, point, LoadSettings(threads=2, max_new_tokens=args.tokens))
    ids = prompts.synthetic(model.tokenizer(), args.prompt_len, 1)[0]
    adapter.generate([ids], args.tokens)  # warm-up
    ours_tpot, theirs_tpot, ours_ttft, theirs_ttft = [], [], [], []
    for _ in range(args.rounds):
        trace = adapter.generate([ids], args.tokens)
        r = Round.from_trace(trace, 0)
        ours_tpot.append((r.e2e_s - r.ttft_s) / (r.n_generated - 1) * 1e3)
        ours_ttft.append(r.ttft_s * 1e3)
        theirs_tpot.append(trace.engine_metrics["tpot_ms"])
        theirs_ttft.append(trace.engine_metrics["prompt_eval_ms"])
    med = statistics.median
    print("| model | rounds | TPOT ours ms | TPOT llama.cpp ms | ratio | TTFT ours ms | prompt eval llama.cpp ms | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {args.model} | {args.rounds} | {med(ours_tpot):.2f} | {med(theirs_tpot):.2f} | "
          f"{med(o / t for o, t in zip(ours_tpot, theirs_tpot)):.3f} | {med(ours_ttft):.2f} | {med(theirs_ttft):.2f} | "
          f"{med(o / t for o, t in zip(ours_ttft, theirs_ttft)):.3f} |")


if __name__ == "__main__":
    main()
