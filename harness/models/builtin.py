"""The built-in model names a scenario's ``model.source`` can give: the embedded default and the tiny models."""

from __future__ import annotations

DEFAULT_MODEL = "gemma3-270m"
TINY_PREFIX = "tiny-"


def tiny_architecture(source: str) -> str:
    """The ``harness.models.tiny`` architecture a ``tiny-<name>`` source names (``tiny-gemma3-text`` -> ``gemma3_text``)."""
    return source[len(TINY_PREFIX) :].replace("-", "_")
