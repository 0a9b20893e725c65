"""The regression check behind ``harness gate`` and the pytest plugin's ``--harness-baseline``: settings, one entry
(``entry.run_check``), thresholds, the launch test, significance, baselines and confirmation."""
