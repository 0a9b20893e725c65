"""``harness report``: records -> a self-contained HTML page, a Markdown summary and CSV tables.

Reads record files, results directories and pytest-benchmark JSON written by the harness plugin,
from one run or many machines. Plots and tables appear only when the data has their axes. What the
report holds is the list of sections in ``harness.report.sections``; this module runs them in order.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from harness import __version__
from harness.errors import writing
from harness.io import write_bytes_atomic
from harness.records import store
from harness.report import render
from harness.report.plots import Plot
from harness.report.sections import SECTIONS
from harness.report.sections.base import Context, Figure, Page, SectionOutput

# Left in every directory a report is written to: ``harness report -o`` writes again only into a
# directory that holds it (or an empty one, or with --replace), never over files it did not write.
MARKER = ".harness-report"


@dataclass
class Written:
    directory: Path
    html: Path
    markdown: Path
    csv: list[Path]
    plots: list[Path]


def build(
    sources: Iterable[str | Path], out_dir: str | Path, title: str | None = None, history: str | None = None
) -> Written:
    """The report of ``sources``; with ``history`` (a results-history URL) also trend plots of the
    points that moved and the table of open change points."""
    paths = [Path(s) for s in sources]
    pairs = list(store.iter_records(paths))
    if not pairs:
        from harness.errors import UsageError

        raise UsageError(f"no result records under {', '.join(map(str, paths))}")
    out = Path(out_dir)
    with writing(out, kept=f"the report under {out} is incomplete"):  # the records are read: writes only
        return _write(pairs, paths, out, title, history)


def _write(pairs, paths: list[Path], out: Path, title: str | None, history: str | None) -> Written:
    (out / "plots").mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out / MARKER, f"written by harness report {__version__}\n".encode("utf-8"))
    timed = store.timing_view(pairs)  # one record per point: the run's where it also has a verify record
    kept = {id(record) for _, record in timed}
    verified = store.frame(pair for pair in pairs if id(pair[1]) not in kept)
    ctx = Context(df=store.frame(timed), pairs=timed, out=out, history=history, verified=verified)
    parts = {section.NAME: section.build(ctx) for section in SECTIONS}
    figures = [_figure(plot, out) for part in parts.values() for plot in part.plots]
    page = Page(
        title=title or f"harness report: {out.name}",
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        version=__version__,
        ctx=ctx,
        parts=parts,
        figures=figures,
    )
    csv_files = _write_tables(parts, out)
    html_path = write_bytes_atomic(out / "index.html", _html(page, paths).encode("utf-8"))
    md_path = write_bytes_atomic(out / "summary.md", _markdown(page).encode("utf-8"))
    return Written(out, html_path, md_path, csv_files, [f.file for f in figures])


def _figure(plot: Plot | Figure, out: Path) -> Figure:
    """A section's plot as a PNG under ``out/plots``; a figure a section wrote itself stays where it is."""
    if isinstance(plot, Figure):
        return plot
    png = render.png(plot.figure)
    path = write_bytes_atomic(out / "plots" / f"{plot.slug}.png", png)
    return Figure(slug=plot.slug, title=plot.title, caption=plot.caption, file=path, png=png)


def _write_tables(parts: dict[str, SectionOutput], out: Path) -> list[Path]:
    written = []
    for part in parts.values():
        for name, table in part.tables.items():
            if not table.empty:
                written.append(write_bytes_atomic(out / f"{name}.csv", table.to_csv(index=False).encode("utf-8")))
    return written


def _html(page: Page, sources: list[Path]) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    df = page.ctx.df
    summary = {
        "points": len(df),
        "statuses": df["status"].value_counts().to_dict(),
        "sources": ", ".join(map(str, sources)),
        "hosts": sorted({str(h) for h in df.get("host", pd.Series(dtype=object)).dropna()}),
        "gate_failures": int((df.get("gate_verdict") == "fail").sum()) if "gate_verdict" in df else 0,
    }
    env = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    return env.get_template("report.html.j2").render(
        title=page.title,
        summary=summary,
        generated_at=page.generated_at,
        version=page.version,
        page=page,
        tables=page.shown,
        sections=SECTIONS,
    )


def _markdown(page: Page) -> str:
    statuses = page.ctx.df["status"].value_counts().to_dict()
    lines = [
        f"# {html.escape(page.title)}\n",
        f"{len(page.ctx.df)} points ({', '.join(f'{n} {s}' for s, n in statuses.items())}); "
        f"generated {page.generated_at} by harness {page.version}. Full page: index.html.\n",
    ]
    lines += [text for text in (section.markdown(page) for section in SECTIONS) if text]
    return "\n".join(lines)
