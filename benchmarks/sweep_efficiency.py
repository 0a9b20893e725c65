"""How much of a sweep's wall time is measured inference, cold (empty caches) and warm, with persistent
workers and with a process per point, side by side in one run.

    python benchmarks/sweep_efficiency.py [--isolation worker point none]

A 12-point sweep over three engines on the default model (hf bf16; openvino fp and int8_sym;
llamacpp on the model's GGUF) x prompt lengths 16/32/64, 16 new tokens, 2 timed rounds, no gate.
Cold: a fresh cache directory (GGUF -> bf16 conversion, OpenVINO export and compression included).
Warm: the same sweep again on that cache. "Inference share" = the timed rounds' end-to-end time
summed over points / wall time of the sweep. The records' time split (harness.records.record.TimeSplit) says
where the rest went.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings

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


def sweep(cache: Path, results: Path, isolation: str, rounds: int = 2) -> tuple[float, float, int, dict]:
    text = SWEEP.replace("min_rounds: 2", f"min_rounds: {rounds}")
    loaded = planning.loads(text, "<sweep-efficiency>", "sweep_efficiency")
    runner = Runner(RunSettings(results_dir=results, cache_dir=cache, isolation=isolation, energy=False))
    start = time.perf_counter()
    records = runner.run([loaded], progress=False)
    wall = time.perf_counter() - start
    inference = sum(r.e2e_s for rec in records if rec.status == "ok" for r in rec.samples.rounds)
    split: dict[str, float] = {}
    for record in records:
        for name, seconds in (record.time_split.model_dump() if record.time_split else {}).items():
            split[name] = split.get(name, 0.0) + seconds
    return wall, inference, sum(r.status == "ok" for r in records), split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", nargs="+", choices=("worker", "point", "none"), default=["worker", "point"])
    parser.add_argument(
        "--rounds", type=int, default=2, help="timed rounds per point (the sweep above: 2, after 1 warm-up round)"
    )
    args = parser.parse_args()
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for isolation in args.isolation:  # each mode its own cold cache, then warm on it
            for name in ("cold", "warm"):
                runs[isolation, name] = sweep(
                    tmp / f"cache-{isolation}", tmp / f"{isolation}-{name}", isolation, args.rounds
                )
    print("| isolation | run | points ok | wall s | measured inference s | inference share |")
    print("|---|---|---|---|---|---|")
    for (isolation, name), (wall, inference, ok, _) in runs.items():
        print(f"| {isolation} | {name} | {ok}/12 | {wall:.1f} | {inference:.1f} | {inference / wall:.1%} |")
    for isolation in args.isolation:
        print(f"{isolation}: warm is {runs[isolation, 'cold'][0] / runs[isolation, 'warm'][0]:.2f}x faster than cold")
    names = list(next(iter(runs.values()))[3])
    print("\nwhere the warm sweeps' time went (seconds, summed over points):")
    print("| isolation | " + " | ".join(n.removesuffix("_s") for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for isolation in args.isolation:
        split = runs[isolation, "warm"][3]
        print(f"| {isolation} | " + " | ".join(f"{split.get(n, 0):.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
