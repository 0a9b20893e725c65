"""Spread: the coefficient of variation of inter-token gaps, noisiest point first (HTML and CSV only)."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput

NAME = "spread"
TEMPLATE = "sections/spread.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.spread(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return ""  # the summary leaves the per-point spread to the page
