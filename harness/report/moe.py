"""The report's MoE section: per-layer expert load and imbalance from the routing stored in records
(``Record.routing``), and what a static expert capacity costs (drop rate and gate KL vs capacity)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from harness.report import plots


def routing_frame(pairs: Iterable[tuple[Optional[Path], object]]) -> pd.DataFrame:
    """Long form, one row per (point, layer, expert): tokens routed and the layer's share of them."""
    rows = []
    for _, record in pairs:
        routing = record.routing if record.status == "ok" else None
        if routing is None:
            continue
        dropped = routing.dropped or [0] * len(routing.counts)
        for layer, counts in enumerate(routing.counts):
            total = sum(counts) or 1
            for expert, tokens in enumerate(counts):
                rows.append(
                    {
                        "scenario": record.scenario,
                        "point_id": record.point_id,
                        "layer": layer,
                        "expert": expert,
                        "tokens": tokens,
                        "load_share": tokens / total,
                        "imbalance": routing.imbalance[layer],
                        "layer_dropped": dropped[layer],
                        "layer_drop_rate": dropped[layer] / total,
                        "capacity": routing.capacity,
                    }
                )
    return pd.DataFrame(rows)


def layer_table(routing: pd.DataFrame) -> pd.DataFrame:
    """Per point and layer: imbalance r_l, the busiest expert's share, drop rate."""
    if routing.empty:
        return routing
    grouped = routing.groupby(["scenario", "point_id", "layer"], sort=True)
    return grouped.agg(
        imbalance=("imbalance", "first"),
        busiest_share=("load_share", "max"),
        drop_rate=("layer_drop_rate", "first"),
        tokens=("tokens", "sum"),
    ).reset_index()


def layer_load_plot(routing: pd.DataFrame) -> Optional[plots.Plot]:
    """Imbalance per layer for every point, and one point's layer x expert load as a heat map."""
    if routing.empty:
        return None
    plt = plots.pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    layers = layer_table(routing)
    series = list(layers.groupby(["scenario", "point_id"]))[: plots.MAX_SERIES]
    for (scenario, point_id), data in series:
        left.plot(data["layer"], data["imbalance"], marker="o", label=f"{scenario}::{point_id}")
    left.axhline(1.0, color="#9e9e9e", linestyle=":")
    left.set_xlabel("layer")
    left.set_ylabel("imbalance r_l = max / mean tokens per expert")
    left.legend(fontsize=6)
    (scenario, point_id), _ = series[0]
    shown = routing[(routing.scenario == scenario) & (routing.point_id == point_id)]
    grid = shown.pivot(index="layer", columns="expert", values="load_share")
    image = right.imshow(grid.to_numpy(), aspect="auto", cmap="viridis")
    right.set_xlabel("expert")
    right.set_ylabel("layer")
    right.set_title(f"load share: {point_id}", fontsize=8)
    for axis in (left.xaxis, right.xaxis, right.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    fig.colorbar(image, ax=right)
    fig.suptitle("Expert load per layer")
    fig.tight_layout()
    return plots.Plot(
        "moe_layer_load",
        "MoE expert load and imbalance per layer",
        fig,
        "Tokens routed per expert over a prefill of the point's prompts (NPUMoE's r_l). "
        "Balanced routing sits at r_l = 1.",
    )


def capacity_plot(df: pd.DataFrame) -> Optional[plots.Plot]:
    """Drop rate and gate KL (x noise floor) against the static expert capacity."""
    return plots.panels(
        df,
        "moe_capacity",
        ["moe_drop_rate", "gate_kl_ratio"],
        "moe_capacity",
        "What a static expert capacity costs",
        "Capacity = tokens each expert takes per forward pass; overflow dropped, least "
        "salient first. Unlimited-capacity points have no x value.",
        log_x=True,
        labels={"gate_kl_ratio": "gate mean KL / noise floor"},
    )


def build(df: pd.DataFrame, pairs) -> tuple[dict[str, pd.DataFrame], list[plots.Plot]]:
    """(tables by name, plots) for the report; empty when no record has MoE routing."""
    routing = routing_frame(pairs)
    ok = df[df["status"] == "ok"] if "status" in df else df
    built = [p for p in (layer_load_plot(routing), capacity_plot(ok)) if p is not None]
    tables = {"moe_layers": layer_table(routing), "moe_routing": routing} if not routing.empty else {}
    return tables, built
