"""The correctness gate: references, the gate's tiers and phases, KL statistics, same-weights and diagnosis."""
