"""The ``harness`` command line: one module per command family."""

from harness.cli.app import main

__all__ = ["main"]
