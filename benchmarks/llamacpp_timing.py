"""Our per-token clock against llama.cpp's own perf counters, on the same generations.

    python benchmarks/llamacpp_timing.py [--model gemma3-270m] [--rounds 10]

Both figures come from the same generation: ours from host timestamps at each token the generator
yields, llama.cpp's from ``llama_perf_context`` (eval time / evals, prompt-eval time). Ours include
the greedy sampler over the vocabulary (262k entries for Gemma), which llama.cpp counts apart.
Ratios are ours / llama.cpp's; medians.
"""

from __future__ import annotations

import argparse

from common import ours_vs_engine

from harness.adapters.base import LoadSettings
from harness.adapters.llamacpp import LlamaCppAdapter
from harness.models import prompts, sources
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=32)
    args = parser.parse_args()

    model = sources.resolve(ModelSpec(source=args.model))
    adapter = LlamaCppAdapter()
    point = Point(adapter="llamacpp", device="cpu", prompt_len=args.prompt_len, id="bench")
    adapter.load(model, point, LoadSettings(threads=2, max_new_tokens=args.tokens))
    ids = prompts.synthetic(model.tokenizer(), args.prompt_len, 1)[0]
    f = ours_vs_engine(adapter, ids, args.rounds, args.tokens, "prompt_eval_ms")
    print(
        "| model | rounds | TPOT ours ms | TPOT llama.cpp ms | ratio | TTFT ours ms | prompt eval llama.cpp ms | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.model} | {args.rounds} | {f['tpot_ours']:.2f} | {f['tpot_engine']:.2f} | {f['tpot_ratio']:.3f} | "
        f"{f['ttft_ours']:.2f} | {f['ttft_engine']:.2f} | {f['ttft_ratio']:.3f} |"
    )


if __name__ == "__main__":
    main()
