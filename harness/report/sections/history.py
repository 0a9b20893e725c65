"""From a results history (``harness report --history URL``): trend plots of the points that moved and
the open change points."""

from __future__ import annotations

from harness.report import render
from harness.report.sections.base import Context, Figure, Page, SectionOutput

NAME = "history"
TEMPLATE = "sections/history.html.j2"
TABLE = "open_change_points"


def build(ctx: Context) -> SectionOutput:
    if not ctx.history:
        return SectionOutput()
    from harness.report.trends import trend_figures

    trend = trend_figures(ctx.history, ctx.out / "plots" / "trends")
    figures = [
        Figure(
            slug=f"trend-{path.parent.name}-{path.stem}",
            title=f"trend: {path.parent.name}::{path.stem}",
            caption="each night's value with its spread; change points and verdict changes marked",
            file=path,
            png=path.read_bytes(),  # already rendered by the history module
        )
        for path in trend.figures
    ]
    table = trend.open_changes
    return SectionOutput(tables={TABLE: table}, shown={TABLE: render.html_table(table, f"{TABLE}.csv")}, plots=figures)


def markdown(page: Page) -> str:
    return ""  # trend plots are listed with every plot; the open change points are on the page
