"""How much of a sweep's wall time is measured inference, cold (empty caches) and warm.

    python benchmarks/sweep_efficiency.py [--isolation point|none]

A 12-point sweep over three engines on the default model (hf bf16; openvino fp and int8_sym;
llamacpp on the model's GGUF) x prompt lengths 16/32/64, 16 new tokens, 2 timed rounds, no gate.
Cold: a fresh cache directory (GGUF -> bf16 conversion, OpenVINO export and compression included).
Warm: the same sweep again on that cache. "Inference share" = the timed rounds' end-to-end time
summed over points / wall time of the sweep.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness import planning
from harness.runner import Runner

SWEEP = """
model: gemma3-270m
generation: {max_new_tokens: 16}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
sweep:
  adapter: [hf]
  device: [cpu]
  prompt_len: [16, 32, 64]
include:
  - {adapter: openvino, device: CPU, prompt_len: 16}
  - {adapter: openvino, device: CPU, prompt_len: 32}
  - {adapter: openvino, device: CPU, prompt_len: 64}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 16}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 32}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 64}
  - {adapter: llamacpp, device: cpu, prompt_len: 16}
  - {adapter: llamacpp, device: cpu, prompt_len: 32}
  - {adapter: llamacpp, device: cpu, prompt_len: 64}
"""


def sweep(cache: Path, results: Path, isolate: bool) -> tuple[float, float, int]:
    loaded = planning.loads(SWEEP, "<sweep-efficiency>", "sweep_efficiency")
    runner = Runner(results_dir=results, cache_dir=cache, isolate=isolate, energy=False)
    start = time.perf_counter()
    records = runner.run([loaded], progress=False)
    wall = time.perf_counter() - start
    inference = sum(r.e2e_s for rec in records if rec.status == "ok" for r in rec.samples.rounds)
    return wall, inference, sum(r.status == "ok" for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", choices=("point", "none"), default="point")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = {name: sweep(tmp / "cache", tmp / name, args.isolation == "point") for name in ("cold", "warm")}
    print("| run | points ok | wall s | measured inference s | inference share |")
    print("|---|---|---|---|---|")
    for name, (wall, inference, ok) in runs.items():
        print(f"| {name} | {ok}/12 | {wall:.1f} | {inference:.1f} | {inference / wall:.1%} |")
    print(f"warm/cold wall-time ratio: {runs['warm'][0] / runs['cold'][0]:.2f} (isolation: {args.isolation})")


if __name__ == "__main__":
    main()
