"""Launches: points measured by independent launches, each figure with its 95 % confidence interval."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "launches"
TEMPLATE = "sections/launches.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.launches(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return table_markdown("Launches (± 95 % confidence interval)", page.tables[NAME], readable=True)
