"""Deprecated alias of ``harness.adapters.coreml.static``."""

import sys

import harness.adapters.coreml.static as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
