"""The gate's prefill phase at the last N prompt positions (``gate.prefill_positions``, issue #29).

One prefill position per prompt (the logits after the whole prompt) gave the prefill phase two positions
on the ``ci`` prompts: too few to judge alone, so a prefill-only fault was diluted in the overall mean,
and one prompt's position could swing a phase. The phase now holds, per prompt, the last N prompt
**prefixes**: the device prefills ``prompt_ids[:n - j]`` anew for j = 0..N-1 on the point's own step-wise
path (its cache and prefill chunking, as every gate step) and its last logits are compared with the
reference's logits at prompt position n - j - 1, by KL and by the two-way top-k check every teacher-forced
position gets (``check``), whose tie margin holds there only under a KL line (``tie_line``). The HF reference
gets all N from one forward over the prompt (``score``); its noise floor is that forward in the floor dtype,
at the same positions. A same-weights reference (``harness.correctness.same_weights``) steps its twin: one
prefill per prefix.

Cost: N prefills of an n-token prompt process about N x n tokens, nothing for short prompts but N times a
long prompt's prefill. A prompt gets at most ``max(1, PREFILL_TOKENS // n)`` positions, so a long prompt
is prefilled at most about ``PREFILL_TOKENS`` tokens' worth more; the record's notes say where it got fewer.
Pure functions and engine calls; the gate (``harness.correctness.gate``) and the reference
(``harness.correctness.reference``) call them.
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np

from harness.correctness import ties
from harness.correctness.kl import floors_of
from harness.correctness.logprobs import coarse_kl, log_softmax, top_ids, top_row, topk_pairs
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records.correctness import Divergence, PromptResult
from harness.scenario.gate_section import GateSettings

PREFILL_TOKENS = 4096  # prompt tokens a prompt's prefill positions may cost in all: long prompts get fewer


def count_for(prompt_length: int, wanted: int) -> int:
    """Prefill positions of an ``prompt_length``-token prompt: ``wanted``, fewer on a long prompt (each is a
    whole prefill), never more than it has prefixes, at least the whole prompt's."""
    return max(1, min(wanted, prompt_length, PREFILL_TOKENS // prompt_length))


def prefix_lengths(prompt_length: int, count: int) -> list[int]:
    """The prefixes' lengths, ascending: the last is the whole prompt."""
    return list(range(prompt_length - count + 1, prompt_length + 1))


def reference_rows(engine, prompt_ids: Sequence[int], wanted: int, top_m: int) -> tuple[list, list]:
    """(top-M ids, their log-probabilities) at the last prompt positions, ascending, from one forward."""
    rows = [
        top_row(log_softmax(logits), top_m) for logits in engine.score(prompt_ids, count_for(len(prompt_ids), wanted))
    ]
    return [ids for ids, _ in rows], [lps for _, lps in rows]


def stepwise_rows(engine, prompt_ids: Sequence[int], wanted: int, top_m: int) -> tuple[list, list]:
    """``reference_rows`` from an engine that only steps (a same-weights twin): one prefill per prefix."""
    lengths = prefix_lengths(len(prompt_ids), count_for(len(prompt_ids), wanted))
    rows = [top_row(log_softmax(engine.prefill(prompt_ids[:length])), top_m) for length in lengths]
    return [ids for ids, _ in rows], [lps for _, lps in rows]


def floor_kls(engine, ref: PromptReference) -> list[float]:
    """The floor engine's KL at each of the reference's prefill positions (one forward)."""
    if not ref.prefill_top_ids:  # none stored; ``score(ids, 0)`` would return every position's logits
        return []
    rows = engine.score(ref.prompt_ids, len(ref.prefill_top_ids))
    return [
        coarse_kl(i, lp, log_softmax(row)) for i, lp, row in zip(ref.prefill_top_ids, ref.prefill_top_logprobs, rows)
    ]


def _device_rows(adapter, ref: PromptReference) -> Iterator[tuple[int, list, list, np.ndarray]]:
    """(prefix length, reference top-M ids, their log-probabilities, device log-probabilities) at each
    prefill position: one fresh prefill of each prefix on the point's path."""
    lengths = prefix_lengths(len(ref.prompt_ids), len(ref.prefill_top_ids))
    for length, ids, lps in zip(lengths, ref.prefill_top_ids, ref.prefill_top_logprobs):
        yield length, ids, lps, log_softmax(adapter.prefill(ref.prompt_ids[:length]))


def measure(adapter, ref: PromptReference) -> Optional[list[float]]:
    """KL(reference || device) at each prefill position, 4 significant digits. None for a reference
    without prefill positions (stored before them)."""
    if not ref.prefill_top_ids:
        return None
    return [float(f"{coarse_kl(ids, lps, row):.4g}") for _, ids, lps, row in _device_rows(adapter, ref)]


def tie_line(noise_floor: dict, settings: GateSettings) -> float:
    """The KL (nats) under which a prefill position's top-k near tie is forgiven: the line that fails the
    prefill phase (``settings.failing`` x its floor). Rounding that moves a token across a near tie leaves the
    position's KL near the floor; ``PrefillTailTopSwap``'s swap, inside the margin on one prompt, put it far
    above. The phase's mean floor, not the position's own: one position's floor is a single noisy sample."""
    return settings.failing * floors_of(noise_floor)["prefill"][0]


def check(
    adapter, index: int, ref: PromptReference, k: int, result: PromptResult, line: Optional[float] = None
) -> None:
    """The gate at prompt ``index``'s prefill positions: their KLs (``result.prefill_kl``) and the two-way
    top-k check every teacher-forced position gets, its tie margin taken only where the position's KL is at
    most ``line`` (``tie_line``; None: no margin) (``prefill_ok``, ``prefill_violations``; the first miss a
    ``Divergence`` in ``result.failures``, its position the sequence position the prefix's logits predict;
    a forgiven near tie counts in ``result.topk_ties``). Nothing for a reference without prefill positions."""
    if not ref.prefill_top_ids:
        return
    kls, misses = [], 0
    for length, ids, lps, row in _device_rows(adapter, ref):
        kl = float(f"{coarse_kl(ids, lps, row):.4g}")
        kls.append(kl)
        device_top = top_ids(row, k).tolist()
        why, _ = ties.topk_miss(ids, lps, row, device_top, k, margin=None)
        if why and line is not None:
            tied, gap = ties.topk_miss(ids, lps, row, device_top, k)
            if not tied and kl <= line:
                why = ""
                ties.count(result, gap)
            elif not tied:
                why += (
                    f" ({gap:.3g} nats, within the {ties.TIE_MARGIN:g}-nat tie margin, but the position's KL "
                    f"{kl:.3g} is above the prefill fail line {line:.3g}: not a near tie)"
                )
        if why and not misses:
            where = f"prefill of the first {length} prompt tokens"
            miss = Divergence(
                prompt=index,
                position=length,
                reference_token=ids[0],
                device_token=device_top[0],
                reference_topk=topk_pairs(ids, lps, k, False),
                device_topk=topk_pairs([], row, k, True),
                ok=False,
                why=f"{where}: {why}",
            )
            result.failures.append(miss)
        misses += bool(why)
    result.prefill_kl, result.prefill_ok, result.prefill_violations = kls, not misses, misses


def parts(results: Sequence[PromptResult], reference: Reference) -> Optional[tuple[list, list]]:
    """(device KLs, floor KLs) per teacher-forced prompt for the prefill phase, or None where any lacks them
    (a reference stored before prefill positions, or built by hand): the phase is then the first
    teacher-forced position of each prompt, as before."""
    measured = [r for r in results if r.position_kl is not None]
    floors = reference.noise_floor.get("prefill_positions")
    device = [r.prefill_kl for r in measured]
    if not measured or floors is None or any(kls is None for kls in device):
        return None
    floor = [list(floors[r.prompt]) for r in measured]
    if [len(kls or []) for kls in device] != [len(kls) for kls in floor]:
        return None
    return [list(kls or []) for kls in device], floor


def notes(reference: Reference) -> list[str]:
    """Where prompts got fewer prefill positions than asked, and why (empty where none did)."""
    wanted = reference.settings.get("prefill_positions")
    short = [(i, len(p.prefill_top_ids), len(p.prompt_ids)) for i, p in enumerate(reference.prompts)]
    short = [s for s in short if wanted and 0 < s[1] < wanted]
    if not short:
        return []
    shown = ", ".join(f"prompt {i} ({n} tokens): {got}" for i, got, n in short)
    return [
        f"prefill phase: fewer than gate.prefill_positions={wanted} positions on {shown}; a prompt gets at most "
        f"one per token and {PREFILL_TOKENS} // its tokens (each position is a whole prefill)"
    ]
