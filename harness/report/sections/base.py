"""What a report section is: ``build(ctx)`` returns its tables, plots and page data; ``markdown(page)``
writes its part of summary.md; ``TEMPLATE`` is its part of the HTML page (templates/sections/).

The builder runs every section's ``build`` first and renders every plot, then renders the page and the
Markdown from one ``Page``: the plot gallery shows plots of sections listed after it, so no section is
rendered before all have been built."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol, Sequence, Union

import pandas as pd
from markupsafe import Markup

from harness.records.record import Record
from harness.report.plots import Plot


@dataclass(frozen=True)
class Context:
    """The input every section reads: the records, their flat frame, where the report is written."""

    df: pd.DataFrame  # one row per point (records.store.frame of store.timing_view)
    pairs: list[tuple[Path, Record]]  # (file, record) in the order they were read, one per point (timing_view)
    out: Path  # the report's directory; plots go under out / "plots"
    history: Optional[str] = None  # a results-history URL (trend plots, open change points)
    # Gate-only records (harness verify) of points that also have a run record: timing reads the run's, the
    # correctness table shows both verdicts (its record_kind column tells them apart).
    verified: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def records(self) -> list[Record]:
        return [record for _, record in self.pairs]


@dataclass(frozen=True)
class Figure:
    """A plot as the page and the Markdown show it: already a PNG file under the report's directory."""

    slug: str  # the figure's HTML id
    title: str
    caption: str
    file: Path  # the PNG, under the report's directory
    png: bytes

    @property
    def base64(self) -> str:
        """The PNG inlined in the page, so index.html stands alone."""
        import base64

        return base64.b64encode(self.png).decode("ascii")


@dataclass
class SectionOutput:
    """One section's share of the report. ``tables``: name -> table, each non-empty one written as
    ``<name>.csv``; ``shown``: the tables the page shows, rendered (a table may be CSV only, or shown
    in fewer columns); ``plots``: matplotlib plots to render, or figures a section already wrote;
    ``data``: anything else its template or Markdown reads (the correctness section's generated texts)."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    shown: dict[str, Markup] = field(default_factory=dict)
    plots: Sequence[Union[Plot, Figure]] = field(default_factory=list)
    data: Any = None


@dataclass(frozen=True)
class Page:
    """Everything the HTML page and the Markdown render from, once every section is built."""

    title: str
    generated_at: str
    version: str
    ctx: Context
    parts: dict[str, SectionOutput]  # section name -> its output
    figures: list[Figure]  # every section's plots, in the order of the sections

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: table for part in self.parts.values() for name, table in part.tables.items()}

    @property
    def shown(self) -> dict[str, Markup]:
        return {name: table for part in self.parts.values() for name, table in part.shown.items()}


class Section(Protocol):
    """A section module: ``NAME``, ``TEMPLATE``, ``build`` and ``markdown`` (see the module docstring)."""

    NAME: str
    TEMPLATE: str

    def build(self, ctx: Context) -> SectionOutput: ...

    def markdown(self, page: Page) -> str: ...


def table_markdown(heading: str, table: Optional[pd.DataFrame], readable: bool = False, always: bool = False) -> str:
    """``## heading`` and the table (``readable``: figures as the page shows them); nothing when the
    table is missing or empty, unless ``always``."""
    from harness.report.render import for_reading, markdown_table

    if table is None or (table.empty and not always):
        return ""
    return f"## {heading}\n\n" + markdown_table(for_reading(table) if readable else table)
