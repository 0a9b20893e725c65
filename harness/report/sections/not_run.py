"""Skipped and failed points, with why."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "not_run"
TEMPLATE = "sections/not_run.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.not_run(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return table_markdown("Skipped and failed points", page.tables[NAME])
