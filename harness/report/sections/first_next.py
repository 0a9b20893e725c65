"""First and next token: time to the first token, ms per next token, and the 32-token overall figure."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "first_next"
TEMPLATE = "sections/first_next.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.first_next(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return table_markdown("First and next token", page.tables[NAME])
