"""The plot gallery: every section's plots, in the order of the sections. Its own plots are the
per-token ones (timeline, the gate's per-position KL) and those over the sweep axes and the time split."""

from __future__ import annotations

from harness.report import plots, token_plots
from harness.report.sections.base import Context, Page, SectionOutput

NAME = "figures"
TEMPLATE = "sections/figures.html.j2"


def build(ctx: Context) -> SectionOutput:
    return SectionOutput(plots=[*token_plots.build(ctx.records), *plots.build_all(ctx.df)])


def markdown(page: Page) -> str:
    shown = [f"![{f.title}]({f.file.relative_to(page.ctx.out).as_posix()})\n\n{f.caption}\n" for f in page.figures]
    return "\n".join(["## Plots\n", *shown])
