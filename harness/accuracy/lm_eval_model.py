"""``lm_eval --model harness``: any harness adapter as an lm-evaluation-harness model.

Log-likelihoods come from the adapter's own logits, teacher-forced (``Adapter.score`` where the engine
returns every position's logits in one pass, else prefill + one decode per continuation token);
``generate_until`` decodes greedily through the adapter. So a quantized OpenVINO model or a llama.cpp
GGUF is scored by the engine that runs it, not by a transformers stand-in.

The model arguments (``--model_args``) are read by ``harness.run.point_lm``, which loads the point.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from lm_eval.api.model import LM

from harness.correctness.logprobs import forced_logprobs, log_softmax
from harness.errors import Unsupported

MAX_GEN_TOKENS = 64  # generate_until's cap when a task sets none


class HarnessLM(LM):
    """An already loaded adapter as an lm-eval model. ``harness.run.point_lm.PointLM`` (what
    ``lm_eval --model harness`` builds) loads a point from ``--model_args`` and then is this."""

    def __init__(self, adapter, tokenizer, eos_ids: Sequence[int], name: str) -> None:
        super().__init__()
        self.adapter, self.tokenizer, self.eos, self.name = adapter, tokenizer, list(eos_ids), name

    @classmethod
    def from_adapter(cls, adapter, tokenizer, eos_ids: Sequence[int], name: str) -> HarnessLM:
        """Wrap an adapter the runner has already loaded (no second load)."""
        return HarnessLM(adapter, tokenizer, eos_ids, name)

    @property
    def tokenizer_name(self) -> str:
        return self.name

    # --- scoring ----------------------------------------------------------------------------------

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    def _pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Token ids of context and continuation, split where the joint encoding splits."""
        whole = self._encode(context + continuation)
        ctx = self._encode(context)
        if whole[: len(ctx)] == ctx and len(whole) > len(ctx):
            return ctx, whole[len(ctx) :]
        return ctx, self.tokenizer.encode(continuation, add_special_tokens=False).ids

    def _logprobs(self, context: list[int], continuation: list[int]) -> list[np.ndarray]:
        """Log-probabilities over the vocabulary at each continuation position."""
        if self.adapter.supports_score:
            return [log_softmax(row) for row in self.adapter.score(context + continuation[:-1], len(continuation))]
        if not self.adapter.supports_logits:
            raise Unsupported(
                f"{self.adapter.name} exposes no logits on this point: log-likelihood tasks "
                "cannot be scored (generation tasks can)"
            )
        return forced_logprobs(self.adapter, context, continuation)

    def _score(self, context: list[int], continuation: list[int]) -> tuple[float, bool]:
        if not context:
            raise ValueError("an empty context needs a BOS token; this tokenizer adds none")
        if not continuation:
            return 0.0, True
        rows = self._logprobs(context, continuation)
        total = float(sum(row[token] for row, token in zip(rows, continuation)))
        greedy = all(int(np.argmax(row)) == token for row, token in zip(rows, continuation))
        return total, greedy

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        return [self._score(*self._pair(*request.args)) for request in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        out = []
        for request in requests:
            ids = self._encode(request.args[0])
            out.append(self._score(ids[:1], ids[1:])[0] if len(ids) > 1 else 0.0)
        return out

    # --- generation -------------------------------------------------------------------------------

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        return [self._generate(*request.args[:2]) for request in requests]

    def _generate(self, context: str, gen_kwargs: dict) -> str:
        until = gen_kwargs.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        limit = int(gen_kwargs.get("max_gen_toks") or MAX_GEN_TOKENS)
        ids = self._encode(context)
        generated: list[int] = []
        if not self.adapter.supports_logits:  # engines with no step-wise logits (static NPU pipelines) generate whole
            generated = self.adapter.generate([ids], limit).output_ids[0]
        else:
            logits = self.adapter.prefill(ids)
            for _ in range(limit):
                token = int(np.argmax(logits))
                if token in self.eos:
                    break
                generated.append(token)
                if _cut(self.tokenizer.decode(generated), until) is not None:
                    break
                logits = self.adapter.decode(token)
        text = self.tokenizer.decode(generated)
        cut = _cut(text, until)
        return text if cut is None else cut


def _cut(text: str, stops: Sequence[str]) -> Optional[str]:
    """``text`` up to its first stop sequence, or None when it has none."""
    found = [text.index(stop) for stop in stops if stop and stop in text]
    return text[: min(found)] if found else None
