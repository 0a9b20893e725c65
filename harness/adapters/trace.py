"""The timed result of ``generate`` and the one clock its timestamps come from.

Timestamps are host ``time.perf_counter_ns()`` values, taken by the adapter right before it starts
the engine (``GenerationTrace.start_ns``) and as soon as each generated token is available on the
host (``token_ns``). Adapters do nothing else per token during a timed ``generate``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from harness.adapters.speculation import VerifySteps

now_ns = time.perf_counter_ns  # the one clock every timestamp comes from


@dataclass
class GenerationTrace:
    start_ns: int
    token_ns: list[int]  # one per decoding step (a step yields one token per sequence in the batch)
    prompt_tokens: int  # per sequence
    batch_size: int = 1
    output_ids: Optional[list[list[int]]] = None  # generated ids per sequence, when cheap to return
    engine_metrics: dict = field(default_factory=dict)  # the engine's own figures, if it reports any
    # A speculative generation's verify steps (harness.adapters.speculation); None when it did not speculate.
    # Tokens one step emits share its timestamp in ``token_ns``: the bursts stay in the per-token timeline.
    speculation: Optional[VerifySteps] = None

    @property
    def n_generated(self) -> int:
        return len(self.token_ns)


def greedy_trace(
    prefill, decode, prompt: Sequence[int], max_new_tokens: int, engine_metrics: Optional[dict] = None
) -> GenerationTrace:
    """A timed greedy generation for engines driven step by step (``prefill``/``decode`` -> logits):
    exactly ``max_new_tokens`` argmax steps, each timestamped as its logits reach the host."""
    import numpy as np

    times, tokens = [], []
    start = now_ns()
    token = int(np.argmax(prefill(list(prompt))))
    times.append(now_ns())
    tokens.append(token)
    while len(tokens) < max_new_tokens:  # EOS does not stop a timed pass
        token = int(np.argmax(decode(token)))
        times.append(now_ns())
        tokens.append(token)
    return GenerationTrace(start, times, len(prompt), 1, [tokens], engine_metrics=dict(engine_metrics or {}))
