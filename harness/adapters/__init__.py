"""Engine adapters shipped with the harness: one module per engine, registered by entry point."""
