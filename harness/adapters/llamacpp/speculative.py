"""Speculative decoding on ``llamacpp``: llama-cpp-python's own ``Llama(draft_model=...)``.

Prompt lookup is its ``LlamaPromptLookupDecoding(max_ngram_size, num_pred_tokens)``; a draft model is a
``LlamaDraftModel`` here (``ModelDraft``: a second ``Llama`` on the draft's GGUF, greedy, its KV cache trimmed to
the common prefix on each call). llama-cpp-python's ``generate`` evaluates the last token plus the candidates in
one batch (a verify step) and samples each position greedily until one differs from its candidate.

The draft is wrapped (``Counted``) to count what it proposes and its time; the tokens ``generate`` yields between
two draft calls are what one verify step emitted. The draft and the all-positions logits it needs are switched on
only inside the speculative ``generate``: the plain path and the gate's step-wise logits read the context as a
point without speculation does.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Optional, Sequence

from harness.adapters.speculation import VerifySteps
from harness.adapters.trace import GenerationTrace, now_ns
from harness.scenario.speculative import DRAFT, Speculation, parse


class Counted:
    """The draft as llama-cpp-python calls it (``LlamaDraftModel``'s protocol: input ids -> candidate ids),
    counting into ``steps``; ``pending`` is what the caller yielded since the last call."""

    def __init__(self, inner):
        self.inner, self.steps, self.pending = inner, VerifySteps(), 0

    def begin(self) -> VerifySteps:
        self.steps, self.pending = VerifySteps(drafted=[0]), 0  # the prompt's forward drafts nothing
        return self.steps

    def __call__(self, input_ids, /, **kwargs):
        self.steps.emitted.append(self.pending)
        self.pending = 0
        start = now_ns()
        candidates = self.inner(input_ids, **kwargs)
        self.steps.draft_ns += now_ns() - start
        self.steps.drafted.append(len(candidates))
        return candidates

    def end(self) -> VerifySteps:
        if self.pending:
            self.steps.emitted.append(self.pending)
        del self.steps.drafted[len(self.steps.emitted) :]  # a proposal whose step never ran
        return self.steps


class ModelDraft:
    """A draft model as a ``LlamaDraftModel``: ``tokens`` greedy tokens from a second ``Llama``."""

    def __init__(self, llm, tokens: int):
        self.llm, self.tokens = llm, tokens

    def __call__(self, input_ids, /, **kwargs):
        import numpy as np

        llm, ids = self.llm, [int(t) for t in input_ids]
        common = 0
        for ours, theirs in zip(llm.input_ids[: llm.n_tokens], ids):
            if ours != theirs:
                break
            common += 1
        llm.n_tokens = min(common, len(ids) - 1)  # at least the last token again: its logits are needed
        llm.eval(ids[llm.n_tokens :])  # eval trims the KV cache to n_tokens first
        vocab = (llm.n_vocab(),)
        out: list[int] = []
        while True:
            out.append(int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=vocab))))
            if len(out) == self.tokens or llm.n_tokens + 1 >= llm.n_ctx():
                return np.asarray(out, dtype=np.intc)
            llm.eval([out[-1]])


def draft_for(spec: Speculation, draft_path: Optional[str], n_ctx: int, threads: Optional[int], params) -> Counted:
    """The counted draft for ``spec``: prompt lookup, or a ``ModelDraft`` on ``draft_path``."""
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    if spec.kind != DRAFT:
        return Counted(LlamaPromptLookupDecoding(max_ngram_size=spec.ngram, num_pred_tokens=spec.tokens))
    with params():
        llm = llama_cpp.Llama(
            model_path=draft_path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=0, verbose=False
        )
    return Counted(ModelDraft(llm, spec.tokens))


@contextmanager
def speculating(llm, draft: Optional[Counted]):
    """``llm`` with ``draft`` attached and every position's logits kept (what its ``generate`` verifies with);
    as loaded again afterwards."""
    llm.draft_model, llm._logits_all = draft, draft is not None
    try:
        yield
    finally:
        llm.draft_model, llm._logits_all = None, False


def generate(llm, draft: Optional[Counted], prompt: Sequence[int], max_new_tokens: int) -> GenerationTrace:
    """Greedy ``Llama.generate`` (llama.cpp's greedy sampler), with ``draft`` speculating when given; one
    timestamp per yielded token (the tokens of one verify step come out back to back)."""
    llm.reset()  # no prefix reuse between rounds: every round pays its prefill
    if draft is not None:
        draft.begin()
    times, tokens = [], []
    with speculating(llm, draft):
        start = now_ns()
        for token in llm.generate(list(prompt), temp=0.0, reset=False):
            times.append(now_ns())
            tokens.append(int(token))
            if draft is not None:
                draft.pending += 1
            if len(tokens) == max_new_tokens:
                break  # EOS does not stop a timed pass
    return GenerationTrace(
        start, times, len(prompt), 1, [tokens], speculation=draft.end() if draft is not None else None
    )


def spec_of(point) -> Speculation:
    return parse(point.speculative)
