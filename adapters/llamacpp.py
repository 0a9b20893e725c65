"""Deprecated alias of ``harness.adapters.llamacpp``."""

import sys

from harness.adapters import llamacpp as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
