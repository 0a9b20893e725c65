"""Deprecated alias of ``harness.records.store`` (documented as ``harness.results.load``); kept for one release."""

import sys

from harness.records import store as _moved

sys.modules[__name__] = _moved  # the same module object, so attribute patches reach the real one
