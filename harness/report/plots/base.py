"""What every report plot is built on: the ``Plot`` a builder returns and matplotlib without a display."""

from __future__ import annotations

from dataclasses import dataclass

MAX_SERIES = 16  # beyond this a legend is unreadable: the series with the most points are kept


@dataclass
class Plot:
    slug: str  # file name stem
    title: str
    figure: object  # matplotlib Figure
    caption: str = ""


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
