"""One launch's generations through the engine's own stopping (``Adapter.generate_until_stop``), each prompt
once: the text path's free-running text and the stopping check run the gate's short prompts through it alike,
greedy, to the same budget, so the second would only repeat the first (measured on the README's main command:
two gate prompts to 32 tokens per engine)."""

from __future__ import annotations

from typing import Sequence


class OwnStopping:
    """``generate_until_stop`` of one loaded engine, remembered by (prompt ids, budget) for one launch's checks."""

    def __init__(self, adapter) -> None:
        self.adapter = adapter
        self._done: dict[tuple[tuple[int, ...], int], list[int]] = {}

    def __call__(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        key = (tuple(prompt_ids), max_new_tokens)
        if key not in self._done:
            self._done[key] = list(self.adapter.generate_until_stop(prompt_ids, max_new_tokens))
        return list(self._done[key])
