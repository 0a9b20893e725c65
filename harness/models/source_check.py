"""A model source checked before anything loads: the built-in names, a checkpoint folder's files, a GGUF's header."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.models.builtin import DEFAULT_MODEL, TINY_PREFIX, tiny_architecture

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec


def problem(spec: ModelSpec) -> str | None:
    """Cheap check before anything loads: why ``spec`` cannot resolve, or None."""
    source = spec.source
    if source == DEFAULT_MODEL:
        return None
    if source.startswith(TINY_PREFIX):
        from harness.models.tiny import ARCHITECTURES

        arch = tiny_architecture(source)
        if arch not in ARCHITECTURES:
            return f"unknown tiny model {source!r}; known: " + ", ".join(
                TINY_PREFIX + a.replace("_", "-") for a in ARCHITECTURES
            )
        return None
    path = Path(source).expanduser()
    if not path.exists():
        return f"{source!r} is neither a built-in model ({DEFAULT_MODEL}, {TINY_PREFIX}<arch>) nor an existing path"
    if path.is_dir():  # every file a reader will be given: regular, bounded, present (checkpoint_files)
        from harness.models import checkpoint_files

        return checkpoint_files.problem(path)
    if path.suffix != ".gguf":
        return f"{source!r} is a file but not a .gguf"
    from harness.models import gguf_header

    return gguf_header.problem(path)  # counts, lengths and offsets against the file's size
