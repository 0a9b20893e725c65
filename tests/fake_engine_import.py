"""A fake engine's import, as slow as a real one or fatal (``tests.fakes.SlowImportAdapter``):
``HARNESS_TEST_ENGINE_IMPORT`` is ``sleep:SECONDS:FILE`` (sleep, then write the wall-clock time the import
finished to FILE) or ``abort`` (the process dies during its import, as a broken native engine does)."""

from __future__ import annotations

import os
import time
from pathlib import Path

_how = os.environ.get("HARNESS_TEST_ENGINE_IMPORT", "")
if _how == "abort":
    os.abort()
if _how.startswith("sleep:"):
    _, seconds, path = _how.split(":", 2)
    time.sleep(float(seconds))
    Path(path).write_text(repr(time.time()))
