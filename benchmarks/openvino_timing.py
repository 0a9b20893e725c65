"""Our per-token clock against OpenVINO GenAI's own perf_metrics, on the same generations.

    python benchmarks/openvino_timing.py [--model gemma3-270m] [--device CPU] [--rounds 10]

Both figures come from the same ``LLMPipeline.generate`` call: ours from host timestamps taken in a
token streamer, GenAI's from ``perf_metrics`` (TTFT, TPOT). Ratios are ours / GenAI's; medians.
"""

from __future__ import annotations

import argparse

from common import ours_vs_engine

from harness.adapters.base import LoadSettings
from harness.adapters.openvino import OpenVINOAdapter
from harness.models import prompts, sources
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--max-seq-len", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt-len", type=int, default=32)
    args = parser.parse_args()

    model = sources.resolve(ModelSpec(source=args.model))
    adapter = OpenVINOAdapter()
    point = Point(
        adapter="openvino", device=args.device, max_seq_len=args.max_seq_len, prompt_len=args.prompt_len, id="bench"
    )
    adapter.load(model, point, LoadSettings(threads=2, max_new_tokens=args.tokens))
    ids = prompts.synthetic(model.tokenizer(), args.prompt_len, 1)[0]
    f = ours_vs_engine(adapter, ids, args.rounds, args.tokens, "ttft_ms")
    print("| model | device | rounds | TPOT ours ms | TPOT GenAI ms | ratio | TTFT ours ms | TTFT GenAI ms | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.model} | {args.device} | {args.rounds} | {f['tpot_ours']:.2f} | {f['tpot_engine']:.2f} | {f['tpot_ratio']:.3f} | "
        f"{f['ttft_ours']:.2f} | {f['ttft_engine']:.2f} | {f['ttft_ratio']:.3f} |"
    )


if __name__ == "__main__":
    main()
