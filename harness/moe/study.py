"""``harness routing MODEL``: the NPUMoE routing analysis of an HF MoE model on two prompt sets, from
real router traces: per-layer load and imbalance, Overlap@K of the popularity rankings (calibration vs
evaluation), and the G x C capacity table (drop rate, padded share, graph launches)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd


@dataclass
class Study:
    experts: pd.DataFrame  # layer, expert, calibration/evaluation tokens and rank
    layers: pd.DataFrame  # layer, imbalance on each set, Overlap@K
    grid: pd.DataFrame  # policy, group_size, capacity, drop_rate, padded_share, launches_per_layer


def run(
    model_source: str,
    prompt_len: int,
    prompts_per_set: int,
    chunk: int,
    capacities: Sequence[int],
    group_sizes: Sequence[int],
    overlap_k: int,
    cache_dir=None,
) -> Study:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from harness.models import prompts, sources
    from harness.moe import routing
    from harness.scenario.schema import ModelSpec

    hf_logging.disable_progress_bar()
    resolved = sources.resolve(ModelSpec(source=model_source), sources.cache_dir(cache_dir))
    model = AutoModelForCausalLM.from_pretrained(str(resolved.hf_dir), dtype=torch.float32).eval()
    routing.expert_config(model.config)  # a dense model fails here, with its model type
    # disjoint windows of the corpus: the first half calibrates, the second half evaluates
    both = prompts.synthetic(resolved.tokenizer(), prompt_len, 2 * prompts_per_set)
    calibration = routing.capture(model, both[:prompts_per_set])
    evaluation = routing.capture(model, both[prompts_per_set:])
    calib_counts, eval_counts = calibration.counts(), evaluation.counts()
    calib_rank, eval_rank = routing.popularity(calib_counts), routing.popularity(eval_counts)
    k = min(overlap_k, calibration.n_experts)
    experts = pd.DataFrame(
        [
            {
                "layer": layer,
                "expert": expert,
                "calibration_tokens": int(calib_counts[layer, expert]),
                "evaluation_tokens": int(eval_counts[layer, expert]),
                "calibration_rank": int(list(calib_rank[layer]).index(expert)),
                "evaluation_rank": int(list(eval_rank[layer]).index(expert)),
            }
            for layer in range(calibration.n_layers)
            for expert in range(calibration.n_experts)
        ]
    )
    layers = pd.DataFrame(
        {
            "layer": range(calibration.n_layers),
            "imbalance_calibration": routing.imbalance(calib_counts),
            "imbalance_evaluation": routing.imbalance(eval_counts),
            f"overlap_at_{k}": routing.overlap_at_k(calib_rank, eval_rank, k),
        }
    )
    grid = routing.capacity_grid(evaluation, chunk, capacities, group_sizes, calibration=calibration)
    return Study(experts, layers, grid)


def write(study: Study, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "routing_experts.csv", out / "routing_layers.csv", out / "capacity_grid.csv"]
    for frame, path in zip((study.experts, study.layers, study.grid), files):
        frame.to_csv(path, index=False)
    return files
