"""transformers' generation code without scikit-learn. ``transformers.generation.candidate_generator`` imports
scikit-learn whenever it is installed (lm-eval pulls it in): 1.3 s of an ``hf`` worker's load, measured on a
2-core runner beside other work, for one feature: the adaptive confidence threshold of
assisted generation, which the harness switches off (``assistant_confidence_threshold = 0``,
``harness.adapters.hf.speculative``), so nothing the harness runs reads it. Everything else in the process may
still import scikit-learn itself (an lm-eval metric does)."""

from __future__ import annotations

import sys

GENERATION = "transformers.generation.candidate_generator"


def import_generation() -> None:
    """Import transformers' generation code with scikit-learn reported absent to it, unless that code or
    scikit-learn is loaded already (then there is nothing to save)."""
    if GENERATION in sys.modules or "sklearn" in sys.modules:
        return
    import importlib

    import transformers.utils as hf_utils

    real = getattr(hf_utils, "is_sklearn_available", None)
    if real is None:  # a transformers that no longer asks: nothing to switch off
        return
    hf_utils.is_sklearn_available = lambda: False
    try:
        importlib.import_module(GENERATION)  # binds the answer above as its own name, once
    finally:
        hf_utils.is_sklearn_available = real
