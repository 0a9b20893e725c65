"""Task accuracy: lm-evaluation-harness scores of each point against the HF reference on the same items."""

from __future__ import annotations

from harness.report import accuracy as accuracy_report
from harness.report import render
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "accuracy"
TEMPLATE = "sections/accuracy.html.j2"


def build(ctx: Context) -> SectionOutput:
    found, plots = accuracy_report.build(ctx.pairs)
    shown = {name: render.html_table(table, f"{name}.csv") for name, table in found.items()}
    return SectionOutput(tables=found, shown=shown, plots=plots)


def markdown(page: Page) -> str:
    return table_markdown("Task accuracy (lm-eval)", page.tables.get(NAME))
