"""``harness report``: records -> a self-contained HTML page, a Markdown summary and CSV tables.

Reads record files, results directories and pytest-benchmark JSON written by the harness plugin,
from one run or many machines. Plots and tables appear only when the data has their axes.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from harness import __version__
from harness.records import metrics
from harness.records import store as results
from harness.records.columns import TIME_SPLIT, warnings
from harness.report import accuracy as accuracy_report
from harness.report import moe as moe_report
from harness.report import plots, tables, token_plots
from harness.report.readable import number, plus_minus, times_floor
from harness.scenario.sweep import ID_ORDER

MAX_SHOWN_OUTPUTS = 20  # generated texts shown under Correctness (failures first)
HTML_ROWS = 500  # per table on the page; the CSV files hold every row


@dataclass
class Written:
    directory: Path
    html: Path
    markdown: Path
    csv: list[Path]
    plots: list[Path]


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return number(value)
    return str(value)


def _with_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """``value ± half-width`` in each metric column that has ``_ci_low``/``_ci_high`` beside it (those two
    dropped), launch-to-launch ``_cv`` columns as percentages."""
    shown = table.copy()
    for column in [c for c in table.columns if f"{c}_ci_low" in table and f"{c}_ci_high" in table]:
        low, high = table[f"{column}_ci_low"], table[f"{column}_ci_high"]
        shown[column] = [
            plus_minus(v, None if pd.isna(lo) else lo, None if pd.isna(hi) else hi)
            for v, lo, hi in zip(table[column], low, high)
        ]
        shown = shown.drop(columns=[f"{column}_ci_low", f"{column}_ci_high"])
    for column in [c for c in shown.columns if c.endswith("_cv")]:
        shown[column] = shown[column].map(lambda v: "-" if pd.isna(v) else f"{number(100 * v)} %")
    return shown


def for_reading(table: pd.DataFrame) -> pd.DataFrame:
    """What a person reads (HTML, Markdown): figures ± their interval over launches, KL as multiples of the
    noise floor instead of raw KL, and speed-ups with their x. The CSV files keep the full values."""
    shown = _with_intervals(table)
    shown = shown.drop(columns=[c for c in ("gate_kl_mean",) if c in shown and "gate_kl_ratio" in shown])
    for column in ("gate_kl_ratio", "kl_over_floor"):
        if column in shown:
            shown = shown.assign(**{column: shown[column].map(times_floor)})
    if "speedup" in shown:
        shown = shown.assign(speedup=shown["speedup"].map(lambda v: "-" if pd.isna(v) else f"{number(v)}x"))
    if "timed_share" in shown:
        shown = shown.assign(
            timed_share=shown["timed_share"].map(lambda v: "-" if pd.isna(v) else f"{number(100 * v)} %")
        )
    labels = {"gate_kl_ratio": "gate_kl / floor", "kl_over_floor": "KL / floor"}
    if "timed_share" in shown:  # the time split table: its parts by their labels
        labels |= {field: f"{label} (s)" for field, label in TIME_SPLIT} | {
            "total_s": "total (s)",
            "timed_share": "timed share",
        }
    return shown.rename(columns=labels)


def markdown_table(table: pd.DataFrame, limit: int = 50) -> str:
    """A GitHub-flavoured Markdown table; cell text is HTML-escaped and pipes/newlines neutralised."""
    if table.empty:
        return "_none_\n"

    def cell(value) -> str:
        return html.escape(_fmt(value)).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in table.columns) + " |", "|" + "---|" * len(table.columns)]
    for row in table.head(limit).itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    if len(table) > limit:
        lines.append(f"\n_{len(table) - limit} more rows in the CSV files._")
    return "\n".join(lines) + "\n"


def _html_table(table: pd.DataFrame, csv_name: str, labelled: bool = False) -> str:
    if table.empty:
        return ""
    shown = for_reading(table.head(HTML_ROWS))
    shown = (_labelled(shown) if labelled else shown).to_html(
        index=False, escape=True, na_rep="-", border=0, float_format=number
    )
    if len(table) > HTML_ROWS:
        shown += f'<p class="meta">First {HTML_ROWS} of {len(table)} rows; all of them are in {csv_name}.</p>'
    return shown


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    """Metric columns headed by their catalogue label and unit (``first token (ms)``)."""
    return table.rename(columns={c: metrics.label(c) for c in table.columns if metrics.find(c)})


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return buffer.getvalue()


def _outputs(pairs: list[tuple[Path, results.Record]]) -> list[dict]:
    """Generated text of gate failures and drifts first, then others, capped."""
    order = {"fail": 0, "drift": 1}
    chosen = sorted((r for _, r in pairs if r.outputs), key=lambda r: (order.get(r.verdict, 2), r.scenario, r.point_id))
    out = []
    for record in chosen[:MAX_SHOWN_OUTPUTS]:
        text = "\n---\n".join(record.outputs.values())
        out.append(
            {"name": f"{record.scenario}::{record.point_id}", "verdict": record.verdict or "no gate", "text": text}
        )
    return out


POINT_COLUMNS = [
    "scenario",
    "point_id",
    "status",
    "host",
    "engine",
    "model",
    *ID_ORDER,
    *metrics.HEADLINE,
    *(f"{m}_ci_{end}" for m in metrics.HEADLINE for end in ("low", "high")),
    "launches",
    "peak_rss_mb",
    "gate_verdict",
]


def build(
    sources: Iterable[str | Path], out_dir: str | Path, title: str | None = None, history: str | None = None
) -> Written:
    """The report of ``sources``; with ``history`` (a results-history URL) also trend plots of the
    points that moved and the table of open change points."""
    from jinja2 import Environment, PackageLoader, select_autoescape
    from markupsafe import Markup

    sources = [Path(s) for s in sources]
    pairs = list(results.iter_records(sources))
    if not pairs:
        from harness.errors import UsageError

        raise UsageError(f"no result records under {', '.join(map(str, sources))}")
    df = results.frame(pairs)
    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    title = title or f"harness report: {out.name}"

    named_tables = {
        "engines": tables.engines(df),
        "overview": tables.overview(df),
        "first_next": tables.first_next(df),
        "correctness": tables.correctness(df),
        "spread": tables.spread(df),
        "launches": tables.launches(df),
        "time_split": tables.time_split(df),
        "not_run": tables.not_run(df),
        "points": df[[c for c in POINT_COLUMNS if c in df]],
    }
    trend_plots = []
    if history:
        from harness.report.trends import trend_figures

        trend = trend_figures(history, out / "plots" / "trends")
        named_tables["open_change_points"] = trend.open_changes
        trend_plots = [
            (f"trend-{path.parent.name}-{path.stem}", f"trend: {path.parent.name}::{path.stem}", path)
            for path in trend.figures
        ]
    moe_tables, moe_plots = moe_report.build(df, pairs)
    accuracy_tables, accuracy_plots = accuracy_report.build(pairs)
    named_tables.update(moe_tables, **accuracy_tables)
    csv_files = [out / "points.csv"]
    df.drop(columns=["path"]).to_csv(csv_files[0], index=False)
    for name, table in named_tables.items():
        if name != "points" and not table.empty:
            csv_files.append(out / f"{name}.csv")
            table.to_csv(csv_files[-1], index=False)

    rendered_plots, plot_files = [], []
    records = [record for _, record in pairs]
    for plot in token_plots.build(records) + plots.build_all(df) + accuracy_plots + moe_plots:
        png = _png(plot.figure)
        plot_files.append(out / "plots" / f"{plot.slug}.png")
        plot_files[-1].write_bytes(png)
        rendered_plots.append(
            {
                "slug": plot.slug,
                "title": plot.title,
                "caption": plot.caption,
                "png": base64.b64encode(png).decode("ascii"),
            }
        )

    for slug, plot_title, path in trend_plots:  # already rendered by the history module
        plot_files.append(path)
        rendered_plots.append(
            {
                "slug": slug,
                "title": plot_title,
                "file": path.relative_to(out).as_posix(),
                "png": base64.b64encode(path.read_bytes()).decode("ascii"),
                "caption": "each night's value with its spread; change points and verdict changes marked",
            }
        )

    summary = {
        "points": len(df),
        "statuses": df["status"].value_counts().to_dict(),
        "sources": ", ".join(map(str, sources)),
        "hosts": sorted({str(h) for h in df.get("host", pd.Series(dtype=object)).dropna()}),
        "gate_failures": int((df.get("gate_verdict") == "fail").sum()) if "gate_verdict" in df else 0,
        "time_split_missing": tables.time_split_missing(df),
    }
    point_warnings = [{"name": f"{r.scenario}::{r.point_id}", "text": text} for r in records for text in warnings(r)]
    generated_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    env = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    page = env.get_template("report.html.j2").render(
        title=title,
        summary=summary,
        generated_at=generated_at,
        version=__version__,
        plots=rendered_plots,
        tables={
            name: Markup(_html_table(table, f"{name}.csv", labelled=name == "engines"))
            for name, table in named_tables.items()
            if name != "moe_routing"
        },  # one row per expert: CSV only
        outputs=_outputs(pairs),
        warnings=point_warnings,
    )
    html_path = out / "index.html"
    html_path.write_text(page, encoding="utf-8")

    md = [
        f"# {html.escape(title)}\n",
        f"{summary['points']} points ({', '.join(f'{n} {s}' for s, n in summary['statuses'].items())}); "
        f"generated {generated_at} by harness {__version__}. Full page: index.html.\n",
        "## Engines\n",
        markdown_table(for_reading(named_tables["engines"])),
        "## Overview\n",
        markdown_table(named_tables["overview"]),
        "## Correctness (failures first)\n",
        markdown_table(for_reading(named_tables["correctness"])),
    ]
    if point_warnings:
        md += (
            ["## Measurement warnings\n"]
            + [f"- {html.escape(w['name'])}: {html.escape(w['text'])}" for w in point_warnings]
            + [""]
        )
    if not named_tables["launches"].empty:
        md += ["## Launches (± 95 % confidence interval)\n", markdown_table(for_reading(named_tables["launches"]))]
    if not named_tables["time_split"].empty:
        md += ["## Where the time went\n", markdown_table(for_reading(named_tables["time_split"]))]
    if not named_tables["first_next"].empty:
        md += ["## First and next token\n", markdown_table(named_tables["first_next"])]
    if "accuracy" in named_tables:
        md += ["## Task accuracy (lm-eval)\n", markdown_table(named_tables["accuracy"])]
    if "moe_layers" in named_tables:
        md += ["## MoE routing per layer\n", markdown_table(named_tables["moe_layers"])]
    if not named_tables["not_run"].empty:
        md += ["## Skipped and failed points\n", markdown_table(named_tables["not_run"])]
    md += ["## Plots\n"] + [
        f"![{p['title']}]({p.get('file') or 'plots/' + p['slug'] + '.png'})\n\n{p['caption']}\n" for p in rendered_plots
    ]
    md_path = out / "summary.md"
    md_path.write_text("\n".join(md), encoding="utf-8")
    return Written(out, html_path, md_path, csv_files, plot_files)
