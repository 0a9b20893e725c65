"""Capacity-limited expert routing inside a running HF MoE model (the NPUMoE paper's static capacity).

Every transformers 5 MoE family (Mixtral, Qwen2/3-MoE, PhiMoE, OLMoE) routes through one call,
``layer.mlp.experts(hidden, top_k_index, top_k_weights)``. A pre-hook there sees each forward pass's
routing: it counts tokens per expert and, under a capacity C, keeps at most C token slots per expert
and forward pass (a prefill chunk or a decode step). The dropped slots get weight 0, so the token
skips that expert and keeps its residual, as on a device with static expert shapes. Which tokens go
first: lowest saliency, the L2 norm of the layer's attention output, captured by a hook on
``layer.self_attn``.
"""

from __future__ import annotations

from typing import Optional

import numpy as np


def moe_layers(model) -> list:
    """Decoder layers whose MLP is a routed mixture of experts (dense layers of mixed models skipped)."""
    return [m for m in model.modules() if hasattr(m, "self_attn") and hasattr(getattr(m, "mlp", None), "experts")]


class RoutingMonitor:
    """Counts routed tokens per layer and expert and, when ``capacity`` is set, drops the overflow."""

    def __init__(self, model, n_experts: int, capacity: Optional[int] = None):
        self.layers = moe_layers(model)
        if not self.layers:
            raise ValueError(f"{model.config.model_type}: no mixture-of-experts layers (layer.mlp.experts) found")
        self.n_experts, self.capacity = n_experts, capacity
        self._saliency: dict[int, object] = {}
        self._handles = []
        self.reset()
        for index, layer in enumerate(self.layers):
            if capacity is not None:  # saliency only orders drops
                self._handles.append(layer.self_attn.register_forward_hook(self._saliency_hook(index)))
            self._handles.append(
                layer.mlp.experts.register_forward_pre_hook(self._routing_hook(index), with_kwargs=True)
            )

    def reset(self) -> None:
        # per layer, on the model's device: counting in a timed pass must not sync it with the host
        self._counts: list = [0] * len(self.layers)
        self._dropped: list = [0] * len(self.layers)

    @property
    def counts(self) -> np.ndarray:
        """[layers, experts] token slots routed since ``reset``."""
        out = np.zeros((len(self.layers), self.n_experts), dtype=np.int64)
        for index, counts in enumerate(self._counts):
            if not isinstance(counts, int):
                out[index] = counts.cpu().numpy()
        return out

    @property
    def dropped(self) -> np.ndarray:
        """[layers] token slots dropped over capacity since ``reset``."""
        return np.array([int(d) for d in self._dropped], dtype=np.int64)

    @property
    def drop_rate(self) -> float:
        routed = self.counts.sum()
        return float(self.dropped.sum() / routed) if routed else 0.0

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _saliency_hook(self, index: int):
        def hook(module, args, output):
            attn = output[0] if isinstance(output, tuple) else output
            self._saliency[index] = attn.reshape(-1, attn.shape[-1]).float().norm(dim=-1)

        return hook

    def _routing_hook(self, index: int):
        import torch

        def hook(module, args, kwargs):
            names = ("hidden_states", "top_k_index", "top_k_weights")
            values = list(args) + [kwargs[n] for n in names[len(args) :]]
            hidden, top_index, top_weights = values[:3]
            flat = top_index.reshape(-1)
            self._counts[index] = self._counts[index] + torch.bincount(flat, minlength=self.n_experts)
            if self.capacity is None:
                return None
            keep = self._keep(flat, top_index.shape[1], self._saliency.get(index))
            if keep is None:
                return None
            self._dropped[index] = self._dropped[index] + (~keep).sum()
            weights = (top_weights.reshape(-1) * keep.to(top_weights.dtype)).reshape(top_weights.shape)
            new = [hidden, top_index, weights]
            return tuple(new[: len(args)]), {**kwargs, **{n: v for n, v in zip(names[len(args) :], new[len(args) :])}}

        return hook

    def _keep(self, flat, top_k: int, saliency):
        """Bool mask over token slots: at most ``capacity`` per expert, most salient tokens first."""
        import torch

        counts = torch.bincount(flat, minlength=self.n_experts)
        if int(counts.max()) <= self.capacity:
            return None
        tokens = torch.arange(flat.numel(), device=flat.device) // top_k
        if saliency is None or saliency.numel() * top_k != flat.numel():
            saliency = torch.zeros(flat.numel() // top_k, device=flat.device)  # ties: earlier tokens first
        keep = torch.ones_like(flat, dtype=torch.bool)
        for expert in torch.nonzero(counts > self.capacity).flatten().tolist():
            slots = torch.nonzero(flat == expert).flatten()
            # stable sort on -saliency: equal saliency keeps token order, so drops are deterministic
            order = torch.sort(-saliency[tokens[slots]], stable=True).indices
            keep[slots[order[self.capacity :]]] = False
        return keep

    def summary(self) -> dict:
        """The routing of everything run since ``reset``, for a result record."""
        from harness.moe.routing import imbalance, popularity

        return {
            "n_experts": self.n_experts,
            "capacity": self.capacity,
            "counts": self.counts.tolist(),
            "imbalance": [round(float(r), 4) for r in imbalance(self.counts)],
            "popularity": popularity(self.counts).tolist(),
            "dropped": self.dropped.tolist(),
            "drop_rate": self.drop_rate,
        }
