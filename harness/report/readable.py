"""Numbers for reading: 3 significant digits, no exponent in the everyday range. Tables, the terminal
summary and the report use this; CSV and JSON keep full values."""

from __future__ import annotations

import math
from typing import Optional


def number(value: Optional[float], digits: int = 3) -> str:
    """``45.678 -> '45.7'``, ``0.012345 -> '0.0123'``, ``2.0 -> '2'``, None/NaN -> '-'. Integer digits
    are never rounded away (``1234.5 -> '1234'``: a max_seq_len of 1024 must read 1024)."""
    if value is None or isinstance(value, bool):
        return "-" if value is None else str(value)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(value):
        return "-"
    if math.isinf(value) or value == 0:
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= 7 or magnitude < -4:
        return f"{value:.{digits - 1}e}"
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def times_floor(ratio: Optional[float]) -> str:
    """A KL as a multiple of the noise floor: ``'1.2x'``; below 0.01x (the reference engine itself) ``'<0.01x'``."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return "-"
    return "<0.01x" if 0 <= ratio < 0.01 else f"{number(ratio)}x"


LOPSIDED = 0.25  # the two sides of an interval differ by more than this share of its width: show both ends


def lopsided(value: float, low: float, high: float) -> bool:
    """An interval a ``±`` would misread: its sides differ by more than ``LOPSIDED`` of its width (a log or
    bootstrap interval of spread launches), or ``value ± half-width`` would cross zero where the interval
    does not."""
    width = high - low
    if width <= 0:
        return False
    half = width / 2
    return abs((high - value) - (value - low)) > LOPSIDED * width or (value - half < 0 <= low)


def plus_minus(value: Optional[float], low: Optional[float] = None, high: Optional[float] = None) -> str:
    """``'50.1 ± 0.46'``: a value with the half-width of its confidence interval ``[low, high]``; a lopsided
    interval (``lopsided``) shows both ends instead, ``'16.9 [9.8, 41]'``; the bare number when either end
    is missing."""
    shown = number(value)
    if shown == "-" or low is None or high is None or any(math.isnan(float(v)) for v in (low, high)):
        return shown
    if lopsided(float(value), float(low), float(high)):
        return f"{shown} [{number(low)}, {number(high)}]"
    return f"{shown} ± {number((float(high) - float(low)) / 2, 2)}"
