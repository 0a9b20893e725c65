"""MoE routing statistics and static-capacity policies (the NPUMoE paper's analysis), from real router
traces. Capture runs the HF model with ``output_router_logits``; everything after capture is pure NumPy.

- counts[l, e]: tokens routed to expert e in layer l (top-k of the router's softmax, ties to lower ids);
- imbalance r_l = max_e n_e / mean_e n_e;
- popularity: experts ranked by count (ties to lower ids); Overlap@K between two rankings = share of
  the top-K experts they agree on (calibration vs evaluation prompt sets);
- capacity policies evaluated per prefill chunk without an NPU: uniform capacity C, or tiers (base
  B/E, popular experts scaled by r_l), experts grouped G per compute graph -> token drop rate,
  padded-slot share and graph launches per layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


@dataclass
class RoutingTrace:
    """Expert choices of every token in every layer: ``choices[l]`` is [tokens, top_k] expert ids."""

    n_experts: int
    top_k: int
    choices: list[np.ndarray]

    @property
    def n_layers(self) -> int:
        return len(self.choices)

    def counts(self, start: int = 0, stop: Optional[int] = None) -> np.ndarray:
        """[layers, experts] tokens routed, over token rows ``start:stop``."""
        out = np.zeros((self.n_layers, self.n_experts), dtype=np.int64)
        for layer, chosen in enumerate(self.choices):
            out[layer] = np.bincount(chosen[start:stop].ravel(), minlength=self.n_experts)
        return out

    def to_dict(self) -> dict:
        return {"n_experts": self.n_experts, "top_k": self.top_k, "choices": [c.tolist() for c in self.choices]}


def expert_config(config) -> tuple[int, int]:
    """(experts, experts per token) from an HF MoE config of any supported family."""
    n_experts = getattr(config, "num_experts", None) or getattr(config, "num_local_experts", None)
    top_k = getattr(config, "num_experts_per_tok", None)
    if not n_experts or not top_k:
        raise ValueError(f"{config.model_type}: not a mixture-of-experts config (no num_experts / num_experts_per_tok)")
    return int(n_experts), int(top_k)


def top_experts(router_logits: np.ndarray, top_k: int) -> np.ndarray:
    """[tokens, top_k] expert ids by router score, ties broken toward the lower id (stable sort)."""
    return np.argsort(-router_logits, axis=-1, kind="stable")[:, :top_k]


def capture(model, prompt_ids: Sequence[Sequence[int]]) -> RoutingTrace:
    """Run each prompt through ``model`` (an HF MoE causal LM) and record its routing; rows are the
    prompts' tokens, concatenated in order."""
    import torch

    n_experts, top_k = expert_config(model.config)
    per_layer: list[list[np.ndarray]] = []
    with torch.no_grad():
        for ids in prompt_ids:
            out = model(torch.tensor([list(ids)]), output_router_logits=True)
            logits = out.router_logits
            if not logits:
                raise ValueError(f"{model.config.model_type}: the model returned no router logits")
            if not per_layer:
                per_layer = [[] for _ in logits]
            for layer, layer_logits in enumerate(logits):
                per_layer[layer].append(top_experts(layer_logits.float().reshape(-1, n_experts).numpy(), top_k))
    return RoutingTrace(n_experts, top_k, [np.concatenate(rows) for rows in per_layer])


def imbalance(counts: np.ndarray) -> np.ndarray:
    """r_l = max_e n_e / mean_e n_e per layer (1.0 = perfectly balanced)."""
    mean = counts.mean(axis=1)
    return np.where(mean > 0, counts.max(axis=1) / np.where(mean > 0, mean, 1), 1.0)


def popularity(counts: np.ndarray) -> np.ndarray:
    """[layers, experts]: expert ids from most to least used, ties toward the lower id."""
    return np.argsort(-counts, axis=1, kind="stable")


def overlap_at_k(ranking_a: np.ndarray, ranking_b: np.ndarray, k: int) -> np.ndarray:
    """Per layer, the share of the top-``k`` experts two rankings agree on."""
    return np.array([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(ranking_a, ranking_b)])


@dataclass(frozen=True)
class CapacityResult:
    policy: str
    group_size: int
    capacity: int  # uniform capacity, or the base capacity of the tiered policy
    drop_rate: float  # routed token-slots over capacity / all routed token-slots
    padded_share: float  # unused capacity slots / all capacity slots
    launches_per_layer: float  # compute-graph launches per layer and chunk (groups with any token)
    graphs_per_layer: int  # groups of experts, i.e. static graphs per layer


def _capacities(policy: str, capacity: int, counts_calib: np.ndarray, n_experts: int) -> np.ndarray:
    """[layers, experts] capacity per expert."""
    layers = counts_calib.shape[0]
    if policy == "uniform":
        return np.full((layers, n_experts), capacity, dtype=np.int64)
    if policy == "tiered":  # popular experts (top quarter of the calibration ranking) get base x r_l
        out = np.full((layers, n_experts), capacity, dtype=np.int64)
        ranking, ratios = popularity(counts_calib), imbalance(counts_calib)
        popular = max(1, n_experts // 4)
        for layer in range(layers):
            out[layer, ranking[layer, :popular]] = math.ceil(capacity * ratios[layer])
        return out
    raise ValueError(f"unknown capacity policy {policy!r} (uniform, tiered)")


def evaluate_capacity(
    trace: RoutingTrace,
    chunk: int,
    policy: str,
    capacity: int,
    group_size: int,
    calibration: Optional[RoutingTrace] = None,
) -> CapacityResult:
    """Static capacities applied to each ``chunk``-token prefill chunk of ``trace``; tiers and expert
    groups follow the calibration trace's popularity (``trace`` itself when none is given)."""
    calib_counts = (calibration or trace).counts()
    caps = _capacities(policy, capacity, calib_counts, trace.n_experts)
    order = popularity(calib_counts)  # popular experts share groups
    n_groups = math.ceil(trace.n_experts / group_size)
    routed = dropped = slots = used = launches = 0
    n_tokens = len(trace.choices[0])
    chunks = range(0, n_tokens, chunk)
    for start in chunks:
        counts = trace.counts(start, start + chunk)
        kept = np.minimum(counts, caps)
        routed += counts.sum()
        dropped += (counts - kept).sum()
        slots += caps.sum()
        used += kept.sum()
        for layer in range(trace.n_layers):
            grouped = counts[layer, order[layer]]
            launches += sum(grouped[g * group_size : (g + 1) * group_size].sum() > 0 for g in range(n_groups))
    per_layer_chunks = trace.n_layers * len(chunks)
    return CapacityResult(
        policy,
        group_size,
        capacity,
        float(dropped / routed) if routed else 0.0,
        float(1 - used / slots) if slots else 0.0,
        float(launches / per_layer_chunks),
        n_groups,
    )


def capacity_grid(
    trace: RoutingTrace,
    chunk: int,
    capacities: Sequence[int],
    group_sizes: Sequence[int],
    calibration: Optional[RoutingTrace] = None,
    policies: Sequence[str] = ("uniform", "tiered"),
):
    """The G x C table (NPUMoE Table 5 columns apart from device latency) as a DataFrame."""
    import pandas as pd

    rows = [
        evaluate_capacity(trace, chunk, policy, c, g, calibration).__dict__
        for policy in policies
        for g in group_sizes
        for c in capacities
    ]
    return pd.DataFrame(rows)
