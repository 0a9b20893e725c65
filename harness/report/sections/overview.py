"""Overview: medians over each group's points, with the gate's verdict counts."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "overview"
TEMPLATE = "sections/overview.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.overview(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return table_markdown("Overview", page.tables[NAME], always=True)
