"""Engines: one row per engine and device, medians over its points, speed-up against the first row."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "engines"
TEMPLATE = "sections/engines.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.engines(ctx.df)
    # headed by the catalogue's labels: this is the table a reader compares engines by
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv", labelled=True)})


def markdown(page: Page) -> str:
    return table_markdown("Engines", page.tables[NAME], readable=True, always=True)
