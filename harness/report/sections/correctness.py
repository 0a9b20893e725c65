"""Correctness: the gate's verdicts, failures first, and the generated text of failures and drifts."""

from __future__ import annotations

import pandas as pd

from harness.report import render, tables
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "correctness"
TEMPLATE = "sections/correctness.html.j2"
MAX_SHOWN_OUTPUTS = 20  # generated texts shown under the table (failures first)


def build(ctx: Context) -> SectionOutput:
    both = pd.concat([ctx.df, ctx.verified], ignore_index=True) if not ctx.verified.empty else ctx.df
    table = tables.correctness(both)  # a point's run and verify verdicts, where it has both
    return SectionOutput(
        tables={NAME: table}, shown={NAME: render.html_table(table, f"{NAME}.csv")}, data=_outputs(ctx)
    )


def markdown(page: Page) -> str:
    return table_markdown("Correctness (failures first)", page.tables[NAME], readable=True, always=True)


def _outputs(ctx: Context) -> list[dict]:
    """Generated text of gate failures and drifts first, then others, capped."""
    order = tables.VERDICT_ORDER
    chosen = sorted(
        (r for r in ctx.records if r.outputs),
        key=lambda r: (order.get(r.verdict or "", len(order)), r.scenario, r.point_id),
    )
    return [
        {
            "name": f"{record.scenario}::{record.point_id}",
            "verdict": record.verdict or "no gate",
            "text": "\n---\n".join(record.outputs.values()),
        }
        for record in chosen[:MAX_SHOWN_OUTPUTS]
    ]
