"""Deprecated: the engine adapters moved to ``harness.adapters`` (this name clashes with PyPI's
AdapterHub package). These shims keep old imports working for one release and warn."""

import warnings

warnings.warn("the top-level 'adapters' package is deprecated: import from 'harness.adapters' instead "
              "(it will be removed in the next release)", DeprecationWarning, stacklevel=2)
