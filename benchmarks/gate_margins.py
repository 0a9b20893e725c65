"""The gate's KL tier on this machine: benign variants and injected faults (tests/faults.py) against the
HF reference, each with its paired rise over the noise floor, the rise's lower bound, the margin over the
line that fails the point, the detectable rise, and the old mean-over-mean ratios for comparison.

python benchmarks/gate_margins.py [--model gemma3-270m] [--prompts ci|all|N] [--tokens 32] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.adapters.base import LoadSettings  # noqa: E402
from harness.adapters.hf import HFAdapter  # noqa: E402
from harness.correctness import gate  # noqa: E402
from harness.correctness.reference import ReferenceSettings, ReferenceStore  # noqa: E402
from harness.models import sources  # noqa: E402
from harness.models.prompts import select_gate_prompts  # noqa: E402
from harness.records.environment import cpu_flags, cpu_model  # noqa: E402
from harness.scenario.gate_section import Gate  # noqa: E402
from harness.scenario.schema import ModelSpec  # noqa: E402
from harness.scenario.sweep import Point  # noqa: E402
from tests import faults  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--prompts", default="ci")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--store", default="/tmp/harness-gate-margins")
    parser.add_argument("--only", nargs="*", default=None, help="variant names to run")
    parser.add_argument("--dump", default=None, help="write per-position KLs (device and floor) to this JSON file")
    args = parser.parse_args()
    selection = int(args.prompts) if args.prompts.isdigit() else args.prompts
    flags = set(cpu_flags())
    print(f"cpu: {cpu_model()}; bf16 flags: {sorted(f for f in flags if 'bf16' in f or 'amx' in f) or 'none'}")
    model = sources.resolve(ModelSpec(source=args.model))
    store = ReferenceStore(Path(args.store))
    reference, _, _ = store.get_or_compute(
        model, select_gate_prompts(selection), ReferenceSettings(tokens=args.tokens, threads=2)
    )
    variants = [
        ("fp32", HFAdapter, "fp32", 2),
        ("one-thread", HFAdapter, "bf16", 1),
        *((cls.__name__, cls, "bf16", 2) for cls in faults.BENIGN),
        *((cls.__name__, cls, "bf16", 2) for cls in faults.FAULTS),
    ]
    dumped: dict = {"floor": reference.noise_floor.get("positions")}
    print(
        "variant | verdict | rise | rise_low | margin | detectable | decode rise_low | old mean ratio | old decode ratio"
    )
    for name, cls, dtype, threads in variants:
        if args.only and name not in args.only:
            continue
        adapter = cls()
        adapter.load(model, Point(adapter="hf", device="cpu", id="margins"), LoadSettings(dtype=dtype, threads=threads))
        try:
            result = gate.evaluate(adapter, reference, Gate().settings(quantized=False))
        finally:
            adapter.close()
        dumped[name] = [p.position_kl for p in result.prompts]
        t, d = result.test, result.phases.decode
        print(
            f"{name} | {result.verdict} | {t.rise:.2f} | {t.rise_low:.2f} | {t.margin:.2f} | {t.detectable:.2f} | "
            f"{d.test.rise_low if d.test else float('nan'):.2f} | {result.kl_ratio:.2f} | {d.kl_ratio:.2f}",
            flush=True,
        )
        if args.dump:
            Path(args.dump).write_text(json.dumps(dumped))


if __name__ == "__main__":
    main()
