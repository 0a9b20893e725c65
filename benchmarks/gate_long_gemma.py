"""The gate's long-context fault table on Gemma 3 270M: one long prompt past the 512-token sliding window,
on the HF path, the clean engine and eager attention against the faults of tests/faults_long.py (sliding
window off or doubled, KV cache at 3 bits past position 256, position ids in bf16), each with its verdict
and its KL as a multiple of the noise floor (overall and per position bucket).

python benchmarks/gate_long_gemma.py [--model gemma3-270m] [--length 640] [--kind long-prefill]
    [--tokens 32] [--threads 1] [--store DIR] [--only NAME ...] [--json FILE]

The default prompt is a ``long-prefill`` one: its first ``length - tokens`` positions prefilled (the
prefill path at length), the last ``tokens`` teacher-forced one decode step each, so every compared
position lies past the window. ``--kind long`` decodes every position from 16 on (buckets from 0, but
a decode step per position: on a loaded 2-core machine too slow for the whole table; so were 128
decoded positions at 2 threads, not through the reference in 20 minutes).

Prints a Markdown table, one row per variant as it finishes (``--json FILE`` also writes the figures).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.adapters.base import LoadSettings  # noqa: E402
from harness.adapters.hf import HFAdapter  # noqa: E402
from harness.correctness import gate, lengths  # noqa: E402
from harness.correctness.reference import ReferenceSettings, ReferenceStore  # noqa: E402
from harness.models import sources  # noqa: E402
from harness.records.environment import cpu_model  # noqa: E402
from harness.scenario.gate_section import Gate  # noqa: E402
from harness.scenario.schema import ModelSpec  # noqa: E402
from harness.scenario.sweep import Point  # noqa: E402
from tests import faults_long  # noqa: E402


class SlidingWindowOff(faults_long.SlidingWindowOff):
    """The window switched off. Gemma 3's sliding layers need an integer window to build their mask (None
    raises in transformers 5), so the window is set past any position: every layer sees the whole sequence."""

    def load(self, model, point, settings):
        HFAdapter.load(self, model, point, settings)
        self.model.config.sliding_window = 1 << 30


class Fp32(HFAdapter):
    """Benign: fp32 on the device against the bf16 reference (the noise floor's own engine)."""

    def load(self, model, point, settings):
        super().load(model, point, dataclasses.replace(settings, dtype="fp32"))


VARIANTS = {  # the most informative first: on a loaded machine the table may be cut short
    "HF bf16 (the reference's engine)": HFAdapter,
    "sliding window switched off": SlidingWindowOff,
    f"KV cache stored at 3 bits from position {faults_long.PAST}": faults_long.KVCacheInt3PastN,
    "position ids held in bf16": faults_long.RopePositionsInBf16,
    "eager attention instead of SDPA": faults_long.EagerAttention,
    "sliding window twice its size": faults_long.SlidingWindowDoubled,
    "HF fp32 (the noise floor's engine)": Fp32,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--length", type=int, default=640, help="positions of the long prompt")
    parser.add_argument("--kind", choices=lengths.KINDS, default=lengths.LONG_PREFILL)
    parser.add_argument("--tokens", type=int, default=32, help="teacher-forced positions of a long-prefill prompt")
    parser.add_argument(
        "--threads", type=int, default=1, help="1: on a shared, loaded machine 2 threads wait on each other"
    )
    parser.add_argument("--store", default="/tmp/harness-gate-long-gemma")
    parser.add_argument("--only", nargs="*", default=None, help="variant names (substrings) to run")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    print(f"cpu: {cpu_model()}; threads {args.threads}; {args.kind} prompt of {args.length}", flush=True)
    model = sources.resolve(ModelSpec(source=args.model))
    window, _ = lengths.model_limits(model.hf_dir)
    start = time.perf_counter()
    reference, path, reused = ReferenceStore(Path(args.store)).get_or_compute(
        model,
        [(args.kind, lengths.long_texts()[0])],
        ReferenceSettings(tokens=args.tokens, threads=args.threads, length=args.length),
    )
    how = "reused" if reused else f"computed in {time.perf_counter() - start:.0f} s"
    print(f"model {model.name}, sliding window {window}; reference {how} ({path})", flush=True)
    settings = Gate().settings(quantized=False)  # the scenario defaults: drift fails
    rows: list[dict] = []
    header = None
    for name, cls in VARIANTS.items():
        if args.only and not any(part in name for part in args.only):
            continue
        adapter = cls()
        adapter.load(
            model, Point(adapter="hf", device="cpu", id="long"), LoadSettings(dtype="bf16", threads=args.threads)
        )
        start = time.perf_counter()
        try:
            result = gate.evaluate(adapter, reference, settings)
        finally:
            adapter.close()
        took = time.perf_counter() - start
        buckets = {f"{b.start}-{b.end}": b for b in result.buckets or []}
        if header is None:
            header = list(buckets)
            shown = " | ".join(f"positions {k}" for k in header)
            print(
                f"\n| variant | verdict | KL / floor | paired rise | top-1 agreement | prefill phase | {shown} "
                "| rises at | s |"
            )
            print("|---" * (len(header) + 8) + "|")
        rises = next((k for k, b in buckets.items() if b.verdict in ("drift", "fail")), "—")
        cells = [f"{buckets[k].kl_ratio:.1f}" + ("" if buckets[k].verdict else " (nj)") for k in header]
        rise = f"{result.test.rise:.1f}" if result.test else "—"
        top1 = f"{result.distribution.top1_agreement:.0%}" if result.distribution else "—"
        prefill = result.phases.prefill if result.phases else None
        phase = f"{prefill.kl_ratio:.1f} ({prefill.verdict or 'nj'}, {prefill.positions})" if prefill else "—"
        print(
            f"| {name} | {result.verdict} | {result.kl_ratio:.1f} | {rise} | {top1} | {phase} | {' | '.join(cells)} "
            f"| {rises} | {took:.0f} |"
        )
        sys.stdout.flush()
        rows.append(
            {
                "variant": name,
                "verdict": result.verdict,
                "kl_ratio": result.kl_ratio,
                "rise": result.test.rise if result.test else None,
                "top1_agreement": result.distribution.top1_agreement if result.distribution else None,
                "prefill_phase": prefill.model_dump() if prefill else None,
                "buckets": [b.model_dump() for b in result.buckets or []],
                "reasons": result.reasons,
                "seconds": took,
            }
        )
        if args.json:
            Path(args.json).write_text(json.dumps({"cpu": cpu_model(), "length": args.length, "rows": rows}, indent=1))
    print("\nKL / floor: mean KL over the noise floor (bf16 vs fp32 HF); per bucket against that bucket's floor;")
    print("(nj): bucket not judged (fewer than 16 positions, or a single bucket); fail above 100x, drift above 5x.")


if __name__ == "__main__":
    main()
