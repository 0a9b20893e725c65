"""harness: benchmarking and correctness harness for LLM inference across accelerators.

Importing this package is cheap: engines (torch, openvino, llama_cpp, ...) load only when an
adapter's ``load()`` runs.
"""

__version__ = "0.1.0"
