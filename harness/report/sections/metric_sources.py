"""Metrics: every catalogued figure the records carry, with its unit, direction and where it comes from
(host clock, engine counter, energy sensor, ...: ``harness.records.metric_type.SOURCES``)."""

from __future__ import annotations

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "metrics"
TEMPLATE = "sections/metric_sources.html.j2"


def build(ctx: Context) -> SectionOutput:
    table = tables.metric_sources(ctx.df)
    return SectionOutput(tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return table_markdown("Metrics and their sources", page.tables[NAME])
