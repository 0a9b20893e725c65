"""All points: every record's row. The page shows the identifying columns and headline figures;
points.csv beside it holds every column."""

from __future__ import annotations

from harness.records import metrics
from harness.report import render
from harness.report.sections.base import Context, Page, SectionOutput
from harness.scenario.sweep import ID_ORDER

NAME = "points"
TEMPLATE = "sections/points.html.j2"

POINT_COLUMNS = [
    "scenario",
    "point_id",
    "status",
    "host",
    "engine",
    "model",
    *ID_ORDER,  # the sweep axes, as declared on the scenario schema
    *metrics.HEADLINE,
    *(f"{m}_ci_{end}" for m in metrics.HEADLINE for end in ("low", "high")),
    "launches",
    "peak_rss_mb",
    "gate_verdict",
]


def build(ctx: Context) -> SectionOutput:
    every = ctx.df.drop(columns=["path"])
    page = ctx.df[[c for c in POINT_COLUMNS if c in ctx.df]]
    return SectionOutput(tables={NAME: every}, shown={NAME: render.html_table(page, f"{NAME}.csv")})


def markdown(page: Page) -> str:
    return ""  # the summary names points.csv instead
