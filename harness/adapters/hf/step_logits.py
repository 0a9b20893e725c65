"""The ``hf`` adapter's step-wise logits, what the gate reads: ``prefill`` and ``decode`` on the timed path's
cache (static when the point sets ``max_seq_len``) and prefill chunks, one-pass ``score`` and batched
``prefill_batch`` (left-padded, as ``generate`` pads)."""

from __future__ import annotations

from typing import Sequence

from harness.errors import Unsupported


class HFStepLogits:
    """fp32 logits from ``self.model`` (loaded by ``HFAdapter.load``), one forward at a time."""

    def _forward(self, ids: Sequence[int]):
        torch = self._torch
        with torch.inference_mode():
            tensor = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
            # Explicit positions: a static cache cannot tell its length from its (zero-filled) slots.
            where = torch.arange(self._step_position, self._step_position + len(ids), device=self.device)
            out = self.model(
                input_ids=tensor,
                past_key_values=self._step_cache,
                use_cache=True,
                cache_position=where,
                logits_to_keep=1,
            )
            self._step_cache = out.past_key_values
            self._step_position += len(ids)
            return out.logits[0, -1].float().cpu().numpy()

    def score(self, tokens: Sequence[int], last: int):
        torch = self._torch
        with torch.inference_mode():
            tensor = torch.tensor([list(tokens)], dtype=torch.long, device=self.device)
            # logits_to_keep: the LM head (262k rows for Gemma) runs only where the caller reads
            out = self.model(input_ids=tensor, use_cache=False, logits_to_keep=last)
            return out.logits[0, -last:].float().cpu().numpy()

    def _batch_inputs(self, prompts: Sequence[Sequence[int]]):
        """Input ids, attention mask and position ids of a left-padded batch, as ``generate`` pads a
        decoder-only batch: pads masked out, each row's positions counted from its first real token."""
        torch = self._torch
        longest = max(len(p) for p in prompts)
        pad = self.model.config.pad_token_id
        pad = 0 if pad is None else int(pad)  # any id: masked out
        ids = torch.tensor([[pad] * (longest - len(p)) + list(p) for p in prompts], dtype=torch.long)
        mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
        return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)

    def prefill_batch(self, prompts: Sequence[Sequence[int]]):
        """One forward over the batch, left-padded (``_batch_inputs``): each row's last logits."""
        torch = self._torch
        ids, mask, positions = (t.to(self.device) for t in self._batch_inputs(prompts))
        with torch.inference_mode():
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1
            )
            return out.logits[:, -1].float().cpu().numpy()

    def prefill(self, tokens: Sequence[int]):
        """The prompt's forward on the timed path's cache (static when the point sets ``max_seq_len``),
        in ``moe_chunk_size`` slices when the point chunks its prefill, as ``generate`` does."""
        from transformers import DynamicCache

        limit = self.point.max_seq_len
        if limit is not None and len(tokens) > limit:
            raise Unsupported(f"a {len(tokens)}-token prompt does not fit the static cache (max_seq_len={limit})")
        self._step_cache = self._new_cache() or DynamicCache(config=self.model.config)
        self._step_position = 0
        step = self.point.moe_chunk_size or len(tokens)
        for start in range(0, len(tokens), step):
            logits = self._forward(tokens[start : start + step])
        return logits

    def decode(self, token: int):
        if self._step_cache is None:
            raise RuntimeError("decode() before prefill()")
        limit = self.point.max_seq_len
        if limit is not None and self._step_position >= limit:
            raise Unsupported(f"the static cache is full after {limit} positions (max_seq_len={limit})")
        return self._forward([token])
