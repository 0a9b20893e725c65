"""Where the time went: seconds per part of each scenario's points (loading, warm-up, timed, gate, ...)."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "time_split"
TEMPLATE = "sections/time_split.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.time_split(ctx.df)
    return SectionOutput(
        tables={NAME: table},
        shown={NAME: render.html_table(table, f"{NAME}.csv")},
        data=tables.time_split_missing(ctx.df),  # points left out, said under the table
    )


def markdown(page: Page) -> str:
    return table_markdown("Where the time went", page.tables[NAME], readable=True)
