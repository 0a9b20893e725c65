"""MoE routing: per-layer expert load and imbalance, and what a static expert capacity costs."""

from __future__ import annotations

from harness.report import moe as moe_report
from harness.report import render
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "moe"
TEMPLATE = "sections/moe.html.j2"
SHOWN = "moe_layers"  # moe_routing has one row per expert: CSV only


def build(ctx: Context) -> SectionOutput:
    found, plots = moe_report.build(ctx.df, ctx.pairs)
    shown = {SHOWN: render.html_table(found[SHOWN], f"{SHOWN}.csv")} if SHOWN in found else {}
    return SectionOutput(tables=found, shown=shown, plots=plots)


def markdown(page: Page) -> str:
    return table_markdown("MoE routing per layer", page.tables.get(SHOWN))
