"""Speculative decoding on an adapter: what a speculative ``generate`` counts, and which points an adapter
with the ``speculative`` capability still cannot run (decided before anything loads).

A verify step is one forward of the target over the last accepted token plus the draft's candidates; it
emits the candidates it accepts plus one token of its own. Each engine counts its steps where its API lets
it see them (``harness.adapters.hf.speculative``, ``harness.adapters.llamacpp.speculative``,
``harness.adapters.openvino.speculative``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from harness.scenario.speculative import DRAFT, parse

if TYPE_CHECKING:
    from harness.scenario.sweep import Point


@dataclass
class VerifySteps:
    """One speculative generation's target forwards, in order, the prefill's first: ``drafted[i]`` candidates
    proposed to forward i (0 where there were none: a plain step), ``emitted[i]`` tokens it emitted (the
    candidates it accepted and one token of its own)."""

    drafted: list[int] = field(default_factory=list)
    emitted: list[int] = field(default_factory=list)
    draft_ns: int = 0  # time spent proposing candidates, where the engine lets the harness see it; 0: unknown
    # False: only the totals are the engine's (steps spread evenly over its count of forwards), so no
    # position can be placed in a step
    per_step: bool = True

    def trim(self, tokens: int) -> None:
        """Keep the forwards that emitted the first ``tokens`` tokens, the last one cut to fit."""
        kept, total = [], 0
        for count in self.emitted:
            if total >= tokens:
                break
            kept.append(min(count, tokens - total))
            total += kept[-1]
        self.emitted, self.drafted = kept, self.drafted[: len(kept)]

    @property
    def accepted(self) -> list[int]:
        """Candidates each step accepted (its emitted tokens less its own, never more than were drafted)."""
        return [max(0, min(d, e - 1)) for d, e in zip(self.drafted, self.emitted)]

    def rejected_before(self, position: int) -> Optional[tuple[int, int, int]]:
        """For output position ``position``: (the last forward before the one that emitted it that rejected
        candidates, how many it rejected, how many it was given), or None when no earlier forward rejected any
        (a KV cache not rolled back after a rejection shows up forwards later)."""
        step = self.step_of(position)
        if step is None:
            return None
        for earlier in range(step - 1, -1, -1):
            drafted, accepted = self.drafted[earlier], self.accepted[earlier]
            if accepted < drafted:
                return earlier, drafted - accepted, drafted
        return None

    def step_of(self, position: int) -> Optional[int]:
        if not self.per_step:
            return None
        emitted = 0
        for step, count in enumerate(self.emitted):
            if position < emitted + count:
                return step
            emitted += count
        return None


def speculation_reason(adapter_name: str, quantizations: frozenset[str], point: Point) -> Optional[str]:
    """Why an adapter with the ``speculative`` capability still cannot run ``point``: every engine's
    speculative API decodes one greedy sequence, and a draft runs at a quantization the adapter has."""
    spec = parse(point.speculative)
    if not spec.enabled:
        return None
    if point.batch_size != 1 or point.beam_width != 1:
        return (
            f"{adapter_name} speculates on one greedy sequence (speculative={point.speculative} with "
            f"batch_size={point.batch_size}, beam_width={point.beam_width})"
        )
    if spec.kind == DRAFT and spec.quantization not in quantizations:
        return (
            f"{adapter_name} cannot run a draft at quantization {spec.quantization!r} "
            f"(supports: {', '.join(sorted(quantizations))})"
        )
    return None
