"""What every scenario model shares: the strict base (unknown keys refused, values frozen) and the bounds on
values that would only fail at run time."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# Bounds for values that would only fail at run time or never finish: threads from this machine's cores
# (oversubscribing by more than 8x only slows an engine down), launches from what a night can hold.
MAX_THREADS = max(64, 8 * (os.cpu_count() or 1))
MAX_LAUNCHES = 1000
# Token counts beyond any model's context: refused in the schema, so an astronomic value is an error
# naming its line instead of a run that lasts until the point's timeout. The model's own context is
# checked once it is resolved (harness.run.steps.resolve).
MAX_TOKENS = 1_048_576
Tokens = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
MAX_OPTIONS_BYTES = 64 * 1024  # adapter_options / quantization_options are copied into every record


class Strict(BaseModel):
    """Base of every scenario model: an unknown key is an error, and a loaded scenario never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
