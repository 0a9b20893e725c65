"""A worker parses its first point's tokenizer while it imports its engine.

Parsing Gemma's 33 MB tokenizer.json takes 1.6–1.9 s of native code that releases the GIL, and a worker's
engine import takes seconds of the other core: side by side, the first point finds the tokenizer parsed
(``ResolvedModel.tokenizer`` keeps one per file version). Only a model already in the cache is looked at
(``sources.resolve_built``): a conversion's time and notes belong to the point that needs it. Anything that
goes wrong here is left for the point itself to meet, and the thread is joined before any point runs, so
nothing of it overlaps a measurement.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness.models import sources

if TYPE_CHECKING:
    from harness.scenario.schema import Scenario


def _parse(scenario: Scenario, cache_dir: Optional[Path]) -> None:
    with contextlib.suppress(Exception):  # the point resolves its model again and meets any error itself
        model = sources.resolve_built(scenario.model, cache_dir)
        if model is not None:
            model.tokenizer()


def start(scenario: Optional[Scenario], cache_dir: Optional[Path]) -> Optional[threading.Thread]:
    """The thread parsing ``scenario``'s tokenizer (None: no scenario given); join it before a point runs."""
    if scenario is None:
        return None
    with contextlib.suppress(ImportError):  # here, not in the thread beside the engine's own imports
        importlib.import_module("tokenizers")
    thread = threading.Thread(target=_parse, args=(scenario, cache_dir), name="harness-tokenizer", daemon=True)
    thread.start()
    return thread
