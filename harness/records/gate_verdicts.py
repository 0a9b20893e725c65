"""The correctness gate's verdict words and the rules a verdict can fail by: what the gate parts' ``verdict``
and ``Correctness.failed_by`` hold. A module of their own, below the parts (``harness.records.correctness``,
``.own_weights``), so that each part takes them without importing another."""

from __future__ import annotations

from typing import Literal, get_args

# The gate's verdict words, worst first. ``not judged``: the top-k checks passed but the KL tier had fewer
# teacher-forced positions than ``gate.min_positions``, so nothing showed the point within its noise floor;
# like the regression check's ``unknown``, it exits 0 unless ``--fail-on-unknown`` (exit 4).
FAIL, DRIFT, NOT_JUDGED, PASS = "fail", "drift", "not judged", "pass"
Verdict = Literal["fail", "drift", "not judged", "pass"]
VERDICTS: tuple[str, ...] = get_args(Verdict)

# The rules a gate can fail by (``Correctness.failed_by``): a failure message names the rule, since "top-5
# agreement fails" for a point the drift rule failed sent readers to a check that held.
TOP_K, KL_TIER, DRIFT_RULE, TEXT_PATH, SAME_WEIGHTS = (
    "top-k agreement",
    "KL tier",
    "drift rule",
    "text path",
    "same weights",
)
RULES = (TOP_K, KL_TIER, DRIFT_RULE, TEXT_PATH, SAME_WEIGHTS)
