"""Speculative decoding on ``hf``: transformers' own assisted generation.

``generate(prompt_lookup_num_tokens=..., max_matching_ngram_size=...)`` for prompt lookup,
``generate(assistant_model=...)`` with a constant ``num_assistant_tokens`` (and no confidence cut-off, so a step
drafts exactly that many) for a draft model. Verify steps are counted where transformers lets them be seen:
the candidate generator's ``get_candidates`` (candidates proposed, and the draft's time) and the streamer,
which transformers hands each step's accepted tokens at once (tokens emitted per target forward, one
timestamp per burst).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Optional, Sequence

from harness.adapters.speculation import VerifySteps
from harness.adapters.trace import GenerationTrace, now_ns
from harness.scenario.speculative import DRAFT, PROMPT_LOOKUP, Speculation, parse

if TYPE_CHECKING:
    from harness.adapters.base import Adapter, LoadSettings


class Drafting:
    """A loaded point's speculation: its value and, for a draft, the draft model. ``adapter`` is the loaded
    ``HFAdapter`` (its model, device, dtype and torch)."""

    def __init__(self, adapter: Adapter, spec: Speculation, assistant=None):
        self.adapter, self.spec, self.assistant = adapter, spec, assistant
        eos = adapter.model.generation_config.eos_token_id
        self.eos_ids = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)

    @classmethod
    def load(cls, adapter: Adapter, settings: LoadSettings) -> Optional[Drafting]:
        spec = parse(adapter.point.speculative)
        if not spec.enabled:
            return None
        if spec.kind != DRAFT:
            return cls(adapter, spec)
        from transformers import AutoModelForCausalLM

        if settings.draft is None:
            raise RuntimeError(f"speculative={adapter.point.speculative}: the draft model was not resolved")
        assistant = (
            AutoModelForCausalLM.from_pretrained(
                str(settings.draft.hf_dir),
                dtype=adapter.dtype,
                attn_implementation="sdpa",
                trust_remote_code=settings.trust_remote_code,
            )
            .to(adapter.device)
            .eval()
        )
        config = assistant.generation_config
        config.num_assistant_tokens = spec.tokens
        config.num_assistant_tokens_schedule = "constant"  # exactly spec.tokens per step, as the point says
        config.assistant_confidence_threshold = 0.0
        config.disable_compile = True
        return cls(adapter, spec, assistant)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        adapter = self.adapter
        torch = adapter._torch
        input_ids = torch.tensor([list(prompts[0])], dtype=torch.long, device=adapter.device)
        kwargs: dict = dict(
            max_new_tokens=max_new_tokens,
            # EOS must not shorten timed runs: masked at every position, as min_new_tokens=max_new_tokens masks
            # it on the plain path (assisted generation refuses a minimum length)
            suppress_tokens=self.eos_ids,
            do_sample=False,
            attention_mask=torch.ones_like(input_ids),
        )
        if self.spec.kind == PROMPT_LOOKUP:
            kwargs.update(prompt_lookup_num_tokens=self.spec.tokens, max_matching_ngram_size=self.spec.ngram)
        else:
            kwargs["assistant_model"] = self.assistant
        steps = VerifySteps()
        clock = BurstClock(steps, adapter.synchronize if adapter.device.type != "cpu" else None)
        with torch.inference_mode(), counting(adapter.model, steps):
            adapter.synchronize()
            start = now_ns()
            output = adapter.model.generate(input_ids, streamer=clock, **kwargs)
        prompt_tokens = input_ids.shape[1]
        steps.trim(max_new_tokens)  # a last step may emit past the budget (seen on Gemma 3): cut as generate would
        return GenerationTrace(
            start_ns=start,
            token_ns=clock.times[:max_new_tokens],
            prompt_tokens=prompt_tokens,
            output_ids=output[:, prompt_tokens : prompt_tokens + max_new_tokens].tolist(),
            speculation=steps,
        )

    def close(self) -> None:
        self.assistant = None


class BurstClock:
    """A transformers streamer: ``put`` gets the prompt once, then each target forward's emitted tokens.
    One timestamp per forward, repeated for each of its tokens, and the count of tokens."""

    def __init__(self, steps: VerifySteps, sync=None):
        self.times: list[int] = []
        self.steps, self._sync, self._prompt_seen = steps, sync, False

    def put(self, value) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        if self._sync is not None:
            self._sync()
        stamp = now_ns()
        count = int(value.shape[-1]) if value.dim() else 1
        self.times.extend([stamp] * count)
        self.steps.emitted.append(count)

    def end(self) -> None:
        pass


@contextmanager
def counting(model, steps: VerifySteps):
    """While generating: every candidate generator ``model`` makes counts what it proposes into ``steps``
    (a target forward without candidates counts 0) and the time it takes."""
    make = model._get_candidate_generator

    def counted(*args, **kwargs):
        generator = make(*args, **kwargs)
        propose = generator.get_candidates

        def get_candidates(input_ids, *rest, **named):
            start = now_ns()
            candidates, logits = propose(input_ids, *rest, **named)
            steps.draft_ns += now_ns() - start
            steps.drafted.append(int(candidates.shape[1] - input_ids.shape[1]))
            return candidates, logits

        generator.get_candidates = get_candidates
        return generator

    model._get_candidate_generator = counted
    try:
        yield
    finally:
        del model._get_candidate_generator  # the class's method again
