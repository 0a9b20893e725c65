"""Engine adapters shipped with the harness: one package per engine (its adapter class in
``__init__`` and the engine's own helpers beside it), registered by entry point."""
