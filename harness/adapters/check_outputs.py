"""What an adapter hands the correctness checks beyond plain logit arrays: ``Activations`` (what ``hidden_states``
may return, for the diagnosis) and ``Beam`` (what ``beam_search`` returns, for the beam check)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Activations:
    """What ``hidden_states`` may return instead of a plain list: each component's fp32 output [seq,
    hidden] (logits [seq, vocab], or the last position's alone) of one forward, in forward order. As a
    sequence it is the plain list (the embeddings, then each decoder layer's output), so callers of the
    list form keep working."""

    embedding: np.ndarray
    layers: list[np.ndarray]
    final_norm: Optional[np.ndarray] = None  # the last decoder layer's output after the final norm
    logits: Optional[np.ndarray] = None
    # Taken on the point's own path (``supports_path_hidden_states``): the path in words (cache, chunks), the
    # rows of the real tokens each forward of the prefill held (its chunks), and the positions the prefill ran
    # where that is more than the tokens (padding). None: one forward, or not said.
    path: Optional[str] = None
    forwards: Optional[list[int]] = None
    ran: Optional[int] = None

    def __len__(self) -> int:
        return 1 + len(self.layers)

    def __getitem__(self, index):
        return [self.embedding, *self.layers][index]

    def __iter__(self):
        return iter([self.embedding, *self.layers])


@dataclass(frozen=True)
class Beam:
    """The best sequence of a beam search (``Adapter.beam_search``): its new tokens and the engine's own score
    of it (HF's convention: the sum of its tokens' log-probabilities over ``length ** length_penalty``)."""

    tokens: list[int]
    score: float
    length_penalty: float
