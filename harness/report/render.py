"""How the report shows a table or a plot: rounded figures with their intervals, escaped Markdown and HTML
tables, PNG bytes. Pure of any section: the sections call these on their own tables."""

from __future__ import annotations

import html
import io

import pandas as pd
from markupsafe import Markup

from harness.records import metric_names
from harness.records.columns import TIME_SPLIT
from harness.report.readable import number, plus_minus, times_floor

HTML_ROWS = 500  # per table on the page; the CSV files hold every row


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


def html_table(table: pd.DataFrame, csv_name: str, labelled: bool = False) -> Markup:
    """The table as the page shows it (first ``HTML_ROWS`` rows, readable figures); empty when it is."""
    if table.empty:
        return Markup("")
    shown = for_reading(table.head(HTML_ROWS))
    shown = (_labelled(shown) if labelled else shown).to_html(
        index=False, escape=True, na_rep="-", border=0, float_format=number
    )
    if len(table) > HTML_ROWS:
        shown += f'<p class="meta">First {HTML_ROWS} of {len(table)} rows; all of them are in {csv_name}.</p>'
    return Markup(shown)


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    """Metric columns headed by their catalogue label and unit (``first token (ms)``)."""
    return table.rename(columns={c: metric_names.label(c) for c in table.columns if metric_names.find(c)})


def png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return buffer.getvalue()
