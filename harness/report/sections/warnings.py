"""Measurement warnings: figures that may not be what the engine does on a quiet machine."""

from __future__ import annotations

import html

from harness.records.columns import warnings
from harness.report.sections.base import Context, Page, SectionOutput

NAME = "warnings"
TEMPLATE = "sections/warnings.html.j2"


def build(ctx: Context) -> SectionOutput:
    found = [{"name": f"{r.scenario}::{r.point_id}", "text": text} for r in ctx.records for text in warnings(r)]
    return SectionOutput(data=found)


def markdown(page: Page) -> str:
    found = page.parts[NAME].data
    if not found:
        return ""
    lines = [f"- {html.escape(w['name'])}: {html.escape(w['text'])}" for w in found]
    return "\n".join(["## Measurement warnings\n", *lines, ""])
