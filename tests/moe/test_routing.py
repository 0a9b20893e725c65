"""MoE routing statistics and static-capacity policies, on hand-made traces and on real router traces
of tiny seeded MoE models of two families."""

from __future__ import annotations

import numpy as np
import pytest

from harness.models import prompts, sources
from harness.moe import routing
from harness.scenario.schema import ModelSpec


def trace_of(*layers, n_experts=4, top_k=1):
    return routing.RoutingTrace(n_experts, top_k, [np.asarray(rows).reshape(-1, top_k) for rows in layers])


def test_counts_imbalance_and_popularity():
    trace = trace_of([0, 0, 0, 1, 2, 0], [3, 3, 2, 2, 1, 0])
    counts = trace.counts()
    assert counts.tolist() == [[4, 1, 1, 0], [1, 1, 2, 2]]
    assert routing.imbalance(counts).tolist() == [4 / 1.5, 2 / 1.5]
    assert routing.popularity(counts).tolist() == [[0, 1, 2, 3], [2, 3, 0, 1]]  # ties toward the lower id
    assert trace.counts(0, 3).tolist() == [[3, 0, 0, 0], [0, 0, 1, 2]]


def test_overlap_at_k():
    a = np.array([[0, 1, 2, 3], [3, 2, 1, 0]])
    b = np.array([[1, 0, 3, 2], [0, 1, 2, 3]])
    assert routing.overlap_at_k(a, b, 2).tolist() == [1.0, 0.0]


def test_top_experts_breaks_ties_toward_lower_ids():
    logits = np.array([[0.5, 2.0, 2.0, 1.0]])
    assert routing.top_experts(logits, 2).tolist() == [[1, 2]]


def test_capacity_drops_and_padding_by_hand():
    # one layer, one chunk of 6 tokens, top-1: expert 0 gets 4 tokens, 1 and 2 one each, 3 none
    trace = trace_of([0, 0, 0, 0, 1, 2])
    full = routing.evaluate_capacity(trace, chunk=6, policy="uniform", capacity=4, group_size=1)
    assert full.drop_rate == 0 and full.padded_share == pytest.approx(1 - 6 / 16)
    tight = routing.evaluate_capacity(trace, chunk=6, policy="uniform", capacity=1, group_size=1)
    assert tight.drop_rate == pytest.approx(3 / 6) and tight.padded_share == pytest.approx(1 / 4)
    assert tight.launches_per_layer == 3 and tight.graphs_per_layer == 4  # expert 3 gets no token: no launch
    grouped = routing.evaluate_capacity(trace, chunk=6, policy="uniform", capacity=1, group_size=2)
    assert grouped.graphs_per_layer == 2 and grouped.launches_per_layer == 2
    tiered = routing.evaluate_capacity(trace, chunk=6, policy="tiered", capacity=1, group_size=1)
    # the most popular expert's capacity is scaled by r = 4 / 1.5 -> 3 slots: fewer drops
    assert tiered.drop_rate == pytest.approx(1 / 6)


@pytest.fixture(scope="module", params=["tiny-qwen2-moe", "tiny-mixtral"])
def moe_model(request, cache_dir):
    import torch
    from transformers import AutoModelForCausalLM

    resolved = sources.resolve(ModelSpec(source=request.param), cache_dir)
    model = AutoModelForCausalLM.from_pretrained(str(resolved.hf_dir), dtype=torch.float32).eval()
    return resolved, model


def test_real_router_traces_and_a_capacity_sweep(moe_model):
    resolved, model = moe_model
    tokenizer = resolved.tokenizer()
    calibration = routing.capture(model, prompts.synthetic(tokenizer, 64, 4))
    evaluation = routing.capture(model, prompts.synthetic(tokenizer, 64, 4)[::-1] + prompts.synthetic(tokenizer, 48, 2))
    n_experts, top_k = routing.expert_config(model.config)
    assert (n_experts, top_k) == (8, 2) and calibration.n_layers == 2
    counts = calibration.counts()
    assert (counts.sum(axis=1) == 4 * 64 * top_k).all()
    assert (routing.imbalance(counts) >= 1).all()
    overlap = routing.overlap_at_k(routing.popularity(counts), routing.popularity(evaluation.counts()), 4)
    assert ((0 <= overlap) & (overlap <= 1)).all()
    grid = routing.capacity_grid(
        evaluation, chunk=32, capacities=[16, 8, 4, 2], group_sizes=[1, 4], calibration=calibration
    )
    uniform = grid[(grid.policy == "uniform") & (grid.group_size == 1)].sort_values("capacity", ascending=False)
    drops = uniform.drop_rate.tolist()
    assert drops == sorted(drops) and drops[-1] > drops[0]  # drop rate rises as capacity falls
    assert uniform.padded_share.tolist() == sorted(uniform.padded_share.tolist(), reverse=True)
    assert set(grid.graphs_per_layer) == {8, 2}


def test_a_dense_model_is_not_moe(tiny_llama):
    import json

    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(tiny_llama.hf_dir))
    with pytest.raises(ValueError, match="not a mixture-of-experts config"):
        routing.expert_config(config)
    assert json.loads((tiny_llama.hf_dir / "config.json").read_text())["model_type"] == "llama"
