"""Deprecated alias of ``harness.adapters.openvino``."""

import sys

from harness.adapters import openvino as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
