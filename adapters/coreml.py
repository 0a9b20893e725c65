"""Deprecated alias of ``harness.adapters.coreml``."""

import sys

from harness.adapters import coreml as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
