"""The physical limit of decoding: bytes read per generated token / memory bandwidth.

Bandwidth is measured once per machine with a STREAM-like triad (a = b + s * c over arrays far larger
than the caches) and cached. Bytes per decode step are the weights at their stored precision plus
the KV cache read at the window's average length. Compute bounds for prefill need a peak FLOP/s
figure the harness does not measure yet; records say so.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

from harness.io import write_json_atomic

TRIAD_BYTES = 256 * 2**20  # per array; 3 arrays, far beyond any last-level cache here


def measure_bandwidth(repeats: int = 5) -> float:
    """Sustained memory bandwidth in bytes/s (best of ``repeats`` triads: 2 reads + 1 write)."""
    import numpy as np

    n = TRIAD_BYTES // 8
    b, c = np.ones(n), np.full(n, 2.0)
    a = np.empty(n)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)  # two passes: counted as 2 reads + 1 write + 1 read + 1 write
        best = min(best, time.perf_counter() - start)
    return 5 * TRIAD_BYTES / best


def bandwidth(cache: Path) -> dict:
    """The machine's measured bandwidth, cached in ``cache/bandwidth.json`` keyed by CPU model."""
    from harness.records.environment import cpu_model

    path = Path(cache) / "bandwidth.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    key = cpu_model()
    if key not in known:
        known[key] = {
            "bytes_per_s": measure_bandwidth(),
            "method": "numpy triad, 3 x 256 MiB, best of 5",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        write_json_atomic(path, known)  # runners sharing a cache never read half a file
    return known[key]


def kv_bytes_per_token(config: dict, bytes_per_element: int = 2) -> Optional[int]:
    """KV cache bytes one token adds: 2 (K and V) x layers x kv heads x head dim x element size."""
    try:
        layers = config["num_hidden_layers"]
        heads = config.get("num_key_value_heads") or config["num_attention_heads"]
        head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    except KeyError:
        return None
    return 2 * layers * heads * head_dim * bytes_per_element


def decode_bound(
    weight_bytes: Optional[int],
    config: dict,
    context_tokens: float,
    bandwidth_bytes_per_s: float,
    tpot_ms: Optional[float],
) -> dict:
    if not weight_bytes:
        return {"decode_bound_ms": None, "roofline_fraction": None}
    kv = kv_bytes_per_token(config) or 0
    step_bytes = weight_bytes + kv * context_tokens
    bound_ms = step_bytes / bandwidth_bytes_per_s * 1e3
    return {
        "bytes_per_decode_step": step_bytes,
        "memory_bandwidth_gb_s": bandwidth_bytes_per_s / 1e9,
        "decode_bound_ms": bound_ms,
        "roofline_fraction": bound_ms / tpot_ms if tpot_ms else None,
        "prefill_compute_bound_ms": None,
    }


def unavailable(weight_bytes: Optional[int]) -> dict[str, str]:
    """{metric: why} for the roofline figures ``decode_bound`` leaves empty."""
    if not weight_bytes:
        return dict.fromkeys(("decode_bound_ms", "roofline_fraction"), "the adapter reports no weight size")
    return {"prefill_compute_bound_ms": "prefill compute bound needs a peak FLOP/s figure, not measured yet"}
