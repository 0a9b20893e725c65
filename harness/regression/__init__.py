"""The regression check behind ``harness gate``: thresholds, significance, baselines and confirmation."""
