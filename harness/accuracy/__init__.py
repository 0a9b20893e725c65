"""Task accuracy: evaluation through lm-eval, paired comparisons and the shipped tasks."""
