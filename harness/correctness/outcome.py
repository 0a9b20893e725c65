"""The gate's verdict from its checks' reasons (``decide``), what a gate that cannot run says (``NotRun``), and the
readable failure table; the checks live in ``harness.correctness.gate``. The gate's settings are
``harness.scenario.gate_section.GateSettings``; its result is the record's ``Correctness`` part, with per-prompt
``PromptResult`` (``harness.records.correctness``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.correctness import positions
from harness.correctness.lengths import is_long
from harness.correctness.stored_reference import Reference
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import DRIFT, DRIFT_RULE, FAIL, KL_TIER, NOT_JUDGED, PASS, TOP_K


def decide(fails: list[str], drifts: list[str], unjudged: Optional[str], fail_on_drift: bool) -> tuple[str, list[str]]:
    """(verdict, reasons) from the checks' fail and drift reasons and why the KL tier was not judged (or
    None): a failure fails; drift drifts (fails with ``fail_on_drift``); top-k checks passed with no KL
    tier judged are ``not judged``, never a silent pass."""
    if fails:
        return FAIL, fails
    if drifts:
        return (FAIL, [*drifts[:-1], drifts[-1] + "; drift fails this point"]) if fail_on_drift else (DRIFT, drifts)
    if unjudged:
        return NOT_JUDGED, [unjudged]
    return PASS, []


def failed_rules(topk: list[str], kl_fails: list[str], drifts: list[str], verdict: str) -> list[str]:
    """The rules a ``decide`` verdict failed by: top-k agreement and the KL tier when they failed; the drift
    rule only when nothing else failed (``decide`` then fails on drift, with ``fail_on_drift``)."""
    if verdict != FAIL:
        return []
    rules = [rule for rule, failed in ((TOP_K, topk), (KL_TIER, kl_fails)) if failed]
    return rules or ([DRIFT_RULE] if drifts else [])


@dataclass(frozen=True)
class NotRun:
    why: str  # what the loaded point's engine lacks


def format_failures(result: Correctness, reference: Reference, tokenizer) -> str:
    """A readable table: prompt, position, both tokens as text and id, both top-k with log-probs."""

    def show(token_id: Optional[int]) -> str:
        return "-" if token_id is None else f"{tokenizer.decode([token_id])!r}({token_id})"

    lines = [f"gate {str(result.verdict).upper()}: " + "; ".join(result.reasons)]
    if result.buckets:
        lines.append(positions.describe(result.buckets))
    for prompt in result.prompts:
        seen = set()
        for d in prompt.failures:
            key = (d.position, d.reference_token, d.device_token)
            if key in seen:  # free-running and teacher-forced often fail at the same first position
                continue
            seen.add(key)
            text = reference.prompts[d.prompt].text
            where = f"position {d.position}"
            if is_long(prompt.kind):  # teacher-forced from its head: where that is in the sequence
                where += f" (sequence position {len(reference.prompts[d.prompt].prompt_ids) + d.position})"
            lines.append(f"  prompt {d.prompt} ({prompt.kind}) {text[:50]!r}, {where}: {d.why}")
            lines.append(f"    reference {show(d.reference_token):<24} device {show(d.device_token)}")
            lines.append("    reference top-k: " + ", ".join(f"{show(i)} {lp:.2f}" for i, lp in d.reference_topk))
            if d.device_topk:
                lines.append("    device    top-k: " + ", ".join(f"{show(i)} {lp:.2f}" for i, lp in d.device_topk))
    return "\n".join(lines)
