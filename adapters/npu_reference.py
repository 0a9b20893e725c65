"""Deprecated alias of ``harness.adapters.xrt.npu_reference``."""

import sys

import harness.adapters.xrt.npu_reference as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
