"""A NumPy runner with the AMD NPU guide's dataflow, for Llama-family checkpoints (llama, qwen2).

Fixed-length prefill (the prompt padded with EOS up to ``prefill_len``, logits read at the last
real position), single-token decode, and a host-side KV cache laid out
``[layers, kv_heads, max_seq, head_dim]`` with decode attention on the CPU. It implements the
runner protocol of ``harness.adapters.xrt`` so the adapter, its padding logic and the gate are tested
without an NPU. It is a CPU reference: its timings are never NPU timings.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

FAMILIES = ("llama", "qwen2")


def _rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


class NumpyLlamaRunner:
    """Runner protocol: ``prepare``, ``reset``, ``prefill``, ``decode``, ``profile``."""

    label = "NumPy CPU reference of the NPU dataflow (not NPU timing)"

    def prepare(self, model_dir: str | Path, max_seq_len: int, prefill_len: int, eos_token_id: int) -> dict:
        from safetensors.numpy import load_file

        model_dir = Path(model_dir)
        config = json.loads((model_dir / "config.json").read_text())
        if config.get("model_type") not in FAMILIES:
            raise ValueError(
                f"{model_dir}: the NumPy NPU runner handles {', '.join(FAMILIES)}, not {config.get('model_type')!r}"
            )
        if prefill_len > max_seq_len:
            raise ValueError(f"prefill_len {prefill_len} exceeds max_seq_len {max_seq_len}")
        weights: dict[str, np.ndarray] = {}
        for file in sorted(model_dir.glob("*.safetensors")):
            weights.update({k: v.astype(np.float32) for k, v in load_file(str(file)).items()})
        self.w = weights
        self.n_layers = config["num_hidden_layers"]
        self.n_heads = config["num_attention_heads"]
        self.n_kv = config.get("num_key_value_heads") or self.n_heads
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.n_heads
        self.eps = float(config.get("rms_norm_eps", 1e-6))
        rope = config.get("rope_parameters") or {}
        theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
        inv_freq = 1.0 / theta ** (np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim)
        angles = np.outer(np.arange(max_seq_len), inv_freq)
        angles = np.concatenate([angles, angles], axis=-1)
        self.cos, self.sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        self.lm_head = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
        self.max_seq_len, self.prefill_len, self.eos = max_seq_len, prefill_len, eos_token_id
        shape = (self.n_layers, self.n_kv, max_seq_len, self.head_dim)
        self.k_cache, self.v_cache = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
        self.reset()
        return {
            "runner": self.label,
            "family": config["model_type"],
            "kv_cache_layout": "[layers, kv_heads, max_seq, head_dim]",
            "prefill_len": prefill_len,
            "max_seq_len": max_seq_len,
        }

    def reset(self) -> None:
        self.position = 0  # next position to write; positions >= it in the cache are stale
        self.calls: list[dict] = []

    def _layer(self, i: int, x: np.ndarray, start: int) -> np.ndarray:
        """One decoder layer over rows ``start .. start+len(x)``, attending causally to the cache."""
        p = f"model.layers.{i}."
        w = self.w
        n = x.shape[0]
        h = _rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
        q = h @ w[p + "self_attn.q_proj.weight"].T + w.get(p + "self_attn.q_proj.bias", 0)
        k = h @ w[p + "self_attn.k_proj.weight"].T + w.get(p + "self_attn.k_proj.bias", 0)
        v = h @ w[p + "self_attn.v_proj.weight"].T + w.get(p + "self_attn.v_proj.bias", 0)
        q = q.reshape(n, self.n_heads, self.head_dim).transpose(1, 0, 2)
        k = k.reshape(n, self.n_kv, self.head_dim).transpose(1, 0, 2)
        v = v.reshape(n, self.n_kv, self.head_dim).transpose(1, 0, 2)
        cos, sin = self.cos[start : start + n], self.sin[start : start + n]
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        self.k_cache[i, :, start : start + n], self.v_cache[i, :, start : start + n] = k, v
        end = start + n
        keys = np.repeat(self.k_cache[i, :, :end], self.n_heads // self.n_kv, axis=0)
        values = np.repeat(self.v_cache[i, :, :end], self.n_heads // self.n_kv, axis=0)
        scores = q @ keys.transpose(0, 2, 1) / np.sqrt(self.head_dim)
        causal = np.arange(end)[None, :] > (start + np.arange(n))[:, None]
        scores = np.where(causal[None], -np.inf, scores)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attn = (scores / scores.sum(axis=-1, keepdims=True)) @ values
        x = x + attn.transpose(1, 0, 2).reshape(n, -1) @ w[p + "self_attn.o_proj.weight"].T
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        return x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T

    def _forward(self, tokens: list[int], start: int) -> np.ndarray:
        started = time.perf_counter()
        x = self.w["model.embed_tokens.weight"][np.asarray(tokens)]
        written = time.perf_counter()
        for i in range(self.n_layers):
            x = self._layer(i, x, start)
        ran = time.perf_counter()
        hidden = _rms_norm(x, self.w["model.norm.weight"], self.eps)
        self.calls.append(
            {
                "write_ms": (written - started) * 1e3,
                "run_ms": (ran - written) * 1e3,
                "read_ms": (time.perf_counter() - ran) * 1e3,
            }
        )
        return hidden

    def prefill(self, tokens: list[int]) -> np.ndarray:
        """Pad to the fixed prefill length with EOS, run it, return the logits at the last real position."""
        if not 0 < len(tokens) <= self.prefill_len:
            raise ValueError(f"prompt of {len(tokens)} tokens does not fit the fixed prefill of {self.prefill_len}")
        self.reset()
        padded = list(tokens) + [self.eos] * (self.prefill_len - len(tokens))
        hidden = self._forward(padded, 0)
        self.position = len(tokens)  # padded rows' KV entries are overwritten by decode, never attended
        return hidden[len(tokens) - 1] @ self.lm_head.T

    def decode(self, token: int) -> np.ndarray:
        if self.position >= self.max_seq_len:
            raise RuntimeError(f"KV cache full ({self.max_seq_len} positions)")
        hidden = self._forward([int(token)], self.position)
        self.position += 1
        return hidden[0] @ self.lm_head.T

    def profile(self) -> dict:
        """Per-call split of the last calls: host->device write, kernels, device->host read (ms)."""
        if not self.calls:
            return {}
        return {key: float(np.median([c[key] for c in self.calls])) for key in ("write_ms", "run_ms", "read_ms")}
