"""The correctness gate: top-k agreement with the HF reference, plus a KL tier calibrated to noise.

Two checks per prompt, on the device's step-wise ``prefill``/``decode`` logits:

- **free-running** (the field's standard): the device greedy-decodes on its own; at the first position
  where its token differs from the reference's, the device's token must be in the reference's top-k
  and the reference's token in the device's top-k; comparison stops there. Lengths and EOS must agree
  up to that point.
- **teacher-forced**: the reference's tokens are fed to the device and every position is compared:
  two-way top-k inclusion, top-1 agreement, KL(reference || device) and cosine of the log-probabilities.

Verdict: ``fail`` when a top-k check fails or a mean KL exceeds ``fail_factor`` x its noise floor;
``drift`` when one exceeds ``drift_factor`` x its floor; else ``pass``. The means judged: the overall one,
and each phase's (the prefill position, the decode positions) against its own floor (``harness.correctness.kl``).
Drift is expected of quantized points and reported; on an unquantized point it fails (by default), as a bug:
measured on Gemma 3 270M, HF fp32 sits at 1x the floor, while a decode step that reuses the previous
position id sits at ~11x and a swapped pair of attention heads at ~70x, with identical top-1 tokens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

import numpy as np

from harness.correctness import kl as kl_stats
from harness.correctness import positions
from harness.correctness.kl import MIN_FLOOR
from harness.correctness.lengths import is_long
from harness.correctness.reference import (
    PromptReference,
    Reference,
    coarse_kl,
    coarse_kl_reverse,
    iter_forced_logprobs,
    log_softmax,
    top_ids,
)
from harness.errors import Unsupported
from harness.records.correctness import PositionBucket
from harness.records.record import GatePhases, KLDistribution, PairedTest


@dataclass(frozen=True)
class GateConfig:
    k: int = 5
    mode: str = "both"  # free | forced | both
    drift_factor: float = 5.0
    fail_factor: float = 100.0
    fail_on_drift: bool = True  # the runner sets False for quantized points, where drift is expected
    min_positions: int = 8  # no KL tier (overall or per phase) is judged on fewer teacher-forced positions

    @property
    def lines(self) -> kl_stats.Lines:
        return kl_stats.Lines(self.drift_factor, self.fail_factor, self.fail_on_drift, self.min_positions)


@dataclass
class Divergence:
    """Where two greedy sequences part, with both sides' top-k at that position."""

    prompt: int
    position: int
    reference_token: Optional[int]
    device_token: Optional[int]
    reference_topk: list[tuple[int, float]]
    device_topk: list[tuple[int, float]]
    ok: bool
    why: str = ""


@dataclass
class PromptResult:
    prompt: int
    kind: str
    free_ok: Optional[bool] = None
    free_divergence: Optional[int] = None  # first differing position; None when identical
    free_matched_tokens: Optional[int] = None
    forced_ok: Optional[bool] = None
    forced_first_violation: Optional[int] = None
    forced_violations: int = 0
    top1_match_rate: Optional[float] = None
    kl_mean: Optional[float] = None
    kl_max: Optional[float] = None
    cosine_min: Optional[float] = None
    failures: list[Divergence] = field(default_factory=list)
    # Teacher-forced, per generated position (for the report's KL plot and ``harness export``):
    # KL(reference || device) to 4 significant digits (None in top-1 mode), and 1/0 top-1 agreement.
    position_kl: Optional[list[float]] = None
    position_top1: Optional[list[int]] = None
    position_kl_reverse: Optional[list[float]] = None  # KL(device || reference), same partition and digits


@dataclass
class GateResult:
    verdict: str  # pass | drift | fail
    reasons: list[str]
    k: int
    mode: str
    kl_mean: Optional[float]
    noise_floor: float
    kl_ratio: Optional[float]
    top1_match_rate: Optional[float]
    free_divergence_index: Optional[int]  # earliest over prompts
    prompts: list[PromptResult]
    reference: dict = field(default_factory=dict)
    phases: Optional[GatePhases] = None  # the KL tier per phase (None in top-1 mode)
    distribution: Optional[KLDistribution] = None
    buckets: Optional[list[PositionBucket]] = None  # KL by position (harness.correctness.positions)
    test: Optional[PairedTest] = None  # the overall KL tier's paired test (None in top-1 mode, too few positions)
    min_positions: Optional[int] = None
    notes: list[str] = field(default_factory=list)  # what was not judged, and why

    def to_dict(self) -> dict:
        parts = (("phases", self.phases), ("distribution", self.distribution), ("test", self.test))
        return (
            asdict(self)
            | {name: part.model_dump() if part is not None else None for name, part in parts}
            | {"buckets": [b.model_dump() for b in self.buckets] if self.buckets is not None else None}
        )


def _topk_pairs(
    ids: Sequence[int], logprobs: np.ndarray | Sequence[float], k: int, full: bool
) -> list[tuple[int, float]]:
    if full:
        best = top_ids(np.asarray(logprobs), k)
        return [(int(i), round(float(logprobs[i]), 4)) for i in best]
    return [(int(i), round(float(lp), 4)) for i, lp in zip(ids[:k], logprobs[:k])]


def free_running(
    adapter, index: int, ref: PromptReference, k: int, stop_ids: Sequence[int]
) -> tuple[bool, Optional[int], int, Optional[Divergence]]:
    """(ok, divergence position or None, tokens matched, divergence details)."""
    logits = adapter.prefill(ref.prompt_ids)
    for position, ref_token in enumerate(ref.tokens):
        logprobs = log_softmax(logits)
        device_token = int(top_ids(logprobs, 1)[0])
        if device_token != ref_token:
            ref_top = ref.top_ids[position][:k]
            dev_top = top_ids(logprobs, k).tolist()
            ok = device_token in ref_top and ref_token in dev_top
            why = (
                ""
                if ok
                else (
                    f"device token {device_token} not in reference top-{k}"
                    if device_token not in ref_top
                    else f"reference token {ref_token} not in device top-{k}"
                )
            )
            detail = Divergence(
                index,
                position,
                ref_token,
                device_token,
                _topk_pairs(ref.top_ids[position], ref.top_logprobs[position], k, False),
                _topk_pairs([], logprobs, k, True),
                ok,
                why,
            )
            return ok, position, position, detail
        if device_token in stop_ids or position == len(ref.tokens) - 1:
            break
        logits = adapter.decode(device_token)
    # Same tokens all the way: the reference stopped at EOS only if the device did too (same token).
    return True, None, len(ref.tokens), None


def teacher_forced(adapter, index: int, ref: PromptReference, k: int) -> PromptResult:
    result = PromptResult(prompt=index, kind=ref.kind)
    device = iter_forced_logprobs(adapter, ref.prompt_ids, ref.tokens)
    kls, reverse, cosines, top1, matches = [], [], [], 0, []
    for position, logprobs in enumerate(device):
        ref_ids, ref_lps = ref.top_ids[position], ref.top_logprobs[position]
        ref_token = ref_ids[0]  # the reference's greedy choice (a long prompt feeds its own text instead)
        dev_top = top_ids(logprobs, k).tolist()
        device_token = dev_top[0]
        top1 += device_token == ref_token
        matches.append(int(device_token == ref_token))
        kls.append(coarse_kl(ref_ids, ref_lps, logprobs))
        reverse.append(coarse_kl_reverse(ref_ids, ref_lps, logprobs))
        a, b = np.asarray(ref_lps, dtype=np.float64), logprobs[np.asarray(ref_ids)].astype(np.float64)
        cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
        ok = device_token in ref_ids[:k] and ref_token in dev_top
        if not ok:
            result.forced_violations += 1
            if result.forced_first_violation is None:
                result.forced_first_violation = position
                why = (
                    f"device token {device_token} not in reference top-{k}"
                    if device_token not in ref_ids[:k]
                    else f"reference token {ref_token} not in device top-{k}"
                )
                result.failures.append(
                    Divergence(
                        index,
                        position,
                        ref_token,
                        device_token,
                        _topk_pairs(ref_ids, ref_lps, k, False),
                        _topk_pairs([], logprobs, k, True),
                        False,
                        f"teacher-forced: {why}",
                    )
                )
    result.forced_ok = result.forced_violations == 0
    result.top1_match_rate = top1 / len(ref.tokens)
    result.kl_mean, result.kl_max = float(np.mean(kls)), float(np.max(kls))
    result.cosine_min = float(np.min(cosines))
    result.position_kl = [float(f"{kl:.4g}") for kl in kls]  # compact: 4 digits are plenty against a floor
    result.position_top1 = matches
    result.position_kl_reverse = [float(f"{kl:.4g}") for kl in reverse]
    return result


@dataclass(frozen=True)
class NotRun:
    why: str  # what the loaded point's engine lacks


def unsupported_reason(adapter) -> Optional[str]:
    """Why no gate can run on this loaded adapter, from its flags (nothing is called), or None."""
    if adapter.supports_logits or adapter.supports_forced_top1:
        return None
    return f"{adapter.name} exposes neither step-wise logits nor forced top-1 tokens on this point"


def run(adapter, reference: Reference, config: GateConfig, on_prompt=None) -> GateResult | NotRun:
    """The full gate on step-wise logits, else the top-1 gate on forced tokens, else ``NotRun``. An
    engine's exception (a missing kernel's ``NotImplementedError`` too) is the point's failure.
    ``on_prompt(j, m)`` is called before prompt j (1-based) of m, for progress display."""
    why = unsupported_reason(adapter)
    if why:
        return NotRun(why)
    try:
        if adapter.supports_logits:
            return evaluate(adapter, reference, config, on_prompt)
        return evaluate_top1(adapter, reference, config, on_prompt)
    except Unsupported as exc:  # a limit of this point for these prompts (a static cache's or pipeline's size)
        how = "step-wise logits" if adapter.supports_logits else "no step-wise logits on this point, and forced top-1"
        return NotRun(f"{adapter.name} {how}: {exc}")


CHECKS = {
    "both": ["topk-free", "topk-forced", "kl"],
    "forced": ["topk-forced", "kl"],
    "free": ["topk-free"],
    "forced-top1": ["forced-top1"],
}  # what each mode runs on the gated path (``Correctness.path.checks``)


def evaluate(adapter, reference: Reference, config: GateConfig, on_prompt=None) -> GateResult:
    """Run the gate on a loaded adapter against a reference. The gate's code is the same for every engine."""
    if config.k > reference.settings["top_m"]:
        raise ValueError(f"gate k={config.k} exceeds the reference's stored top-{reference.settings['top_m']}")
    stop = reference.settings["eos_ids"]
    prompt_results = []
    for index, ref in enumerate(reference.prompts):
        if on_prompt:
            on_prompt(index + 1, len(reference.prompts))
        result = (
            teacher_forced(adapter, index, ref, config.k)
            if config.mode in ("forced", "both")
            else PromptResult(index, ref.kind)
        )
        if config.mode in ("free", "both") and not is_long(ref.kind):  # long prompts: teacher-forced only
            ok, divergence, matched, detail = free_running(adapter, index, ref, config.k, stop)
            result.free_ok, result.free_divergence, result.free_matched_tokens = ok, divergence, matched
            if detail is not None and not ok:
                result.failures.insert(0, detail)
        prompt_results.append(result)

    return _conclude(prompt_results, reference, config, config.mode)


def evaluate_top1(adapter, reference: Reference, config: GateConfig, on_prompt=None) -> GateResult:
    """The gate for engines that expose only the token they choose (GenAI's static NPU pipeline).

    Teacher-forced: at every position the device's chosen token, given the reference's prefix, must be
    in the reference's top-k (one way: the device's own top-k is unknowable). No KL tier.
    """
    prompt_results = []
    for index, ref in enumerate(reference.prompts):
        if on_prompt:
            on_prompt(index + 1, len(reference.prompts))
        result = PromptResult(index, ref.kind)
        chosen = adapter.teacher_forced_top1(ref.prompt_ids, ref.tokens)
        for position, (device_token, ref_token) in enumerate(zip(chosen, ref.tokens)):
            if device_token not in ref.top_ids[position][: config.k]:
                result.forced_violations += 1
                if result.forced_first_violation is None:
                    result.forced_first_violation = position
                    result.failures.append(
                        Divergence(
                            index,
                            position,
                            ref_token,
                            device_token,
                            _topk_pairs(ref.top_ids[position], ref.top_logprobs[position], config.k, False),
                            [],
                            False,
                            f"teacher-forced (top-1 only): device token {device_token} not in reference top-{config.k}",
                        )
                    )
        result.forced_ok = result.forced_violations == 0
        greedy = [ids[0] for ids in ref.top_ids]  # the reference's choices (a long prompt feeds its own text)
        result.top1_match_rate = sum(d == r for d, r in zip(chosen, greedy)) / len(ref.tokens)
        result.position_top1 = [int(d == r) for d, r in zip(chosen, greedy)]
        prompt_results.append(result)
    return _conclude(prompt_results, reference, config, "forced-top1")


def _conclude(prompt_results: list[PromptResult], reference: Reference, config: GateConfig, mode: str) -> GateResult:
    floor = max(reference.noise_floor["kl_mean"], MIN_FLOOR)
    kl_values = [r.kl_mean for r in prompt_results if r.kl_mean is not None]
    kl_mean = float(np.mean(kl_values)) if kl_values else None
    ratio = kl_mean / floor if kl_mean is not None else None
    reasons = []
    free_fail = [r.prompt for r in prompt_results if r.free_ok is False]
    forced_fail = [r.prompt for r in prompt_results if r.forced_ok is False]
    if free_fail:
        reasons.append(f"free-running top-{config.k} check failed on prompt(s) {free_fail}")
    if forced_fail:
        reasons.append(f"teacher-forced top-{config.k} check failed on prompt(s) {forced_fail}")
    forward = [r.position_kl for r in prompt_results if r.position_kl is not None]
    lines = config.lines
    phases = kl_stats.phases(forward, reference.noise_floor, lines) if forward else None
    test = kl_stats.overall_test(forward, reference.noise_floor, lines) if forward else None
    notes = [why] if forward and (why := kl_stats.too_few(forward, lines)) else []
    fails, drifts = kl_stats.judge(ratio, test, phases, lines)
    buckets = _buckets(prompt_results, reference, config)
    if buckets:
        more_fails, more_drifts = positions.judge(buckets, config.drift_factor, config.fail_factor)
        fails, drifts = fails + more_fails, drifts + more_drifts
    reasons += fails
    verdict = "fail" if reasons else "pass"
    if verdict == "pass" and drifts:
        verdict = "drift"
        reasons += drifts
        if config.fail_on_drift:
            verdict = "fail"
            reasons[-1] += "; drift fails this point"
    rates = [r.top1_match_rate for r in prompt_results if r.top1_match_rate is not None]
    divergences = [r.free_divergence for r in prompt_results if r.free_divergence is not None]
    return GateResult(
        verdict=verdict,
        reasons=reasons,
        k=config.k,
        mode=mode,
        kl_mean=kl_mean,
        noise_floor=floor,
        kl_ratio=ratio,
        top1_match_rate=float(np.mean(rates)) if rates else None,
        free_divergence_index=min(divergences) if divergences else None,
        prompts=prompt_results,
        phases=phases,
        buckets=buckets,
        test=test,
        min_positions=config.min_positions,
        notes=notes,
        distribution=kl_stats.distribution(
            forward,
            [r.position_kl_reverse or [] for r in prompt_results],
            [r.position_top1 or [] for r in prompt_results],
        ),
    )


def _buckets(prompt_results: list[PromptResult], reference: Reference, config: GateConfig):
    """KL by position bucket of the teacher-forced prompts (None in top-1 mode)."""
    measured = [(r.position_kl, reference.prompts[r.prompt]) for r in prompt_results if r.position_kl is not None]
    if not measured:
        return None
    return positions.buckets(
        [kls for kls, _ in measured],
        [len(ref.prompt_ids) for _, ref in measured],
        reference.noise_floor,
        config.drift_factor,
        config.fail_factor,
    )


def format_failures(result: GateResult, reference: Reference, tokenizer) -> str:
    """A readable table: prompt, position, both tokens as text and id, both top-k with log-probs."""

    def show(token_id: Optional[int]) -> str:
        return "-" if token_id is None else f"{tokenizer.decode([token_id])!r}({token_id})"

    lines = [f"gate {result.verdict.upper()}: " + "; ".join(result.reasons)]
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
