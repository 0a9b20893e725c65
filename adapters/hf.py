"""Deprecated alias of ``harness.adapters.hf``."""

import sys

from harness.adapters import hf as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
