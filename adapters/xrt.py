"""Deprecated alias of ``harness.adapters.xrt``."""

import sys

from harness.adapters import xrt as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
