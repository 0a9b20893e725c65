"""Faults that act only past some position, injected as small wrappers around the HF model.

A port can be right on every short prompt and wrong past a few hundred positions: its sliding window
off or mis-sized, its KV cache stored at a lower precision beyond some position, its position ids held
in bf16 (exact up to 256 only). Each is an ``HFAdapter`` subclass like tests/faults.py; the gate's code
is the same for all of them. ``BENIGN`` variants change the arithmetic but not the model.
"""

from __future__ import annotations

from harness.adapters.hf import HFAdapter

PAST = 256  # where the position-dependent faults start


class SlidingWindowOff(HFAdapter):
    """Every layer attends over the whole sequence: the model's sliding window is ignored."""

    name = "hf-window-off"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.config.sliding_window = None


class SlidingWindowDoubled(HFAdapter):
    """The sliding window is twice its size (a port that reads ``sliding_window`` as a radius)."""

    name = "hf-window-doubled"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.config.sliding_window = 2 * self.model.config.sliding_window


def _int3(states):
    """Round-trip through symmetric 3-bit integers, one scale per head and position (absmax / 3)."""
    scale = states.abs().amax(dim=-1, keepdim=True).clamp_min(1e-8) / 3
    return ((states / scale).round().clamp(-3, 3) * scale).to(states.dtype)


class KVCacheInt3PastN(HFAdapter):
    """Keys and values of positions from ``PAST`` on are stored as 3-bit integers (one scale per head and
    position, as 3-bit KV caches do) and read back: a cache that switches to a compressed store once it
    grows past a block."""

    name = "hf-kv-int3-past-256"

    def prefill(self, tokens):
        from transformers import DynamicCache

        class LossyCache(DynamicCache):
            seen: dict[int, int] = {}

            def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
                start = self.seen.get(layer_idx, 0)
                self.seen[layer_idx] = start + key_states.shape[-2]
                cut = max(0, PAST - start)
                if cut < key_states.shape[-2]:
                    key_states, value_states = key_states.clone(), value_states.clone()
                    for states in (key_states, value_states):
                        states[..., cut:, :] = _int3(states[..., cut:, :])
                return super().update(key_states, value_states, layer_idx, cache_kwargs)

        self._step_cache, self._step_position = LossyCache(config=self.model.config), 0  # positions restart per prompt
        self._step_cache.seen = {}
        return self._forward(tokens)


class RopePositionsInBf16(HFAdapter):
    """Position ids pass through bf16 before the rotary embedding: exact up to 256, then rounded to
    even positions (to multiples of 4 past 512)."""

    name = "hf-rope-bf16-positions"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch

        def rounded(module, args, kwargs):
            if len(args) >= 2:
                x, position_ids, *rest = args
                return (x, position_ids.to(torch.bfloat16).to(position_ids.dtype), *rest), kwargs
            kwargs["position_ids"] = kwargs["position_ids"].to(torch.bfloat16).to(kwargs["position_ids"].dtype)
            return args, kwargs

        for module in self.model.modules():
            if type(module).__name__.endswith("RotaryEmbedding"):
                module.register_forward_pre_hook(rounded, with_kwargs=True)


class EagerAttention(HFAdapter):
    """Benign: the eager attention kernels instead of SDPA."""

    name = "hf-eager"

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.set_attn_implementation("eager")


FAULTS = [SlidingWindowOff, SlidingWindowDoubled, KVCacheInt3PastN, RopePositionsInBf16]
BENIGN = [EagerAttention]
