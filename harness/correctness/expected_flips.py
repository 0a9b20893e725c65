"""The flip rate to expect of an engine whose divergence sits at the point's KL floor: reported beside the
measured flip rate (``harness.correctness.class_check``), so a reader can tell flips the floor's own noise
explains from flips it does not. It changes no verdict.

The model: independent noise of one size ``sigma`` on every logit moves the distribution by
KL(p || q) ~ Var_p(noise) / 2. The gate's KLs are coarse (the reference's stored top-M ids plus one tail bucket,
whose many small noises average out), so ``KL ~ sigma^2 w / 2`` with ``w = sum p_i - sum p_i^2`` over the stored
top-M: an engine at a position's floor KL ``f`` has ``sigma = sqrt(2 f / w)``. The top-1 stays when its noise
``sigma z`` and its lead ``g_j`` over each other stored candidate j outweigh j's noise:
``P(stay) = E_z[prod_j Phi(g_j / sigma + z)]`` (Gauss-Hermite over z), and a flip is the rest. On flat logits
the third and later candidates matter as much as the second. The expected rate is the mean over the decided
positions (lead above the tie margin: the measured rate's own denominator), each with the stored per-position
floor.

Where it holds: independent noise of one size on every logit, as the synthetic check
(tests/correctness/test_expected_flips.py) draws. Rounding that is correlated between the top logits, or
concentrated on a few, flips fewer or more; it is a scale for the measured rate, not a line.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

METHOD = (
    "mean over decided positions of 1 - E_z[prod_j Phi(lead_j / sigma + z)] over the reference's top-M, "
    "sigma = sqrt(2 x floor KL / w), w = sum p - sum p^2 over the top-M: independent logit noise at the floor KL"
)
NODES = 40  # Gauss-Hermite nodes: exact to ~1e-6 for the smooth integrand here
MIN_WEIGHT = 1e-6  # a reference sure of its top-1 hides logit noise from the KL: sigma grows, bounded here


def weight(logprobs: Sequence[float]) -> float:
    """``w`` of one position: the share of independent logit noise the coarse KL sees (its top-M's variance)."""
    p = [math.exp(lp) for lp in logprobs]
    return max(sum(p) - sum(x * x for x in p), MIN_WEIGHT)


def flip_probability(logprobs: Sequence[float], floor_kl: float) -> float:
    """The chance that independent logit noise at coarse KL ``floor_kl`` moves the top-1 of a position whose stored
    top-M log-probabilities are ``logprobs`` (largest first) to another of them."""
    lps = np.asarray(logprobs, dtype=np.float64)
    if len(lps) < 2:
        return 0.0
    leads = lps[0] - lps[1:]
    if floor_kl <= 0.0:
        return 0.0 if leads.min() > 0 else 0.5
    sigma = math.sqrt(2.0 * floor_kl / weight(logprobs))
    z, w = np.polynomial.hermite_e.hermegauss(NODES)  # nodes and weights for the standard normal, sum sqrt(2 pi)
    from scipy.special import ndtr  # the standard normal's distribution function

    stay = np.prod(ndtr(leads[None, :] / sigma + z[:, None]), axis=1)
    return float(max(0.0, 1.0 - (w @ stay) / math.sqrt(2.0 * math.pi)))


def expected_rate(positions: Sequence[tuple[Sequence[float], float]]) -> Optional[float]:
    """The mean flip probability over positions given as (stored top-M log-probabilities, floor KL); None for none."""
    if not positions:
        return None
    return sum(flip_probability(lps, floor) for lps, floor in positions) / len(positions)
