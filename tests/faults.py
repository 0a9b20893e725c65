"""Faults that real ports suffer, injected as small wrappers around the HF model.

Each fault is an ``HFAdapter`` subclass that changes the loaded model (hooks) or its step-wise cache;
the gate's code is the same for all of them.
"""

from __future__ import annotations

from harness.adapters.hf import HFAdapter


def _middle_layer(model) -> int:
    return model.config.num_hidden_layers // 2


def _decoder(model):
    return model.model


def _past(kwargs) -> int:
    """Tokens already in the cache when the decoder is called (its cache position, else the cache's length)."""
    where = kwargs.get("cache_position")
    if where is not None:
        return int(where[0])
    cache = kwargs.get("past_key_values")
    return int(cache.get_seq_length()) if cache is not None else 0


class InterleavedRope(HFAdapter):
    """RoPE applied in the interleaved convention to weights laid out for the half-split one."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch
        head_dim = self.model.config.head_dim
        half = head_dim // 2
        # new[i] = old[2i], new[i + half] = old[2i + 1]: half-split rotation of `new` is the
        # interleaved rotation of `old`.
        perm = torch.empty(head_dim, dtype=torch.long)
        perm[:half] = torch.arange(0, head_dim, 2)
        perm[half:] = torch.arange(1, head_dim, 2)

        def permute(module, args, output):
            shape = output.shape
            return output.view(*shape[:-1], -1, head_dim)[..., perm].reshape(shape)

        for layer in _decoder(self.model).layers:
            attention = layer.self_attn
            for name in ("q_norm", "k_norm") if hasattr(attention, "q_norm") else ("q_proj", "k_proj"):
                getattr(attention, name).register_forward_hook(permute)


class PositionOffByOne(HFAdapter):
    """Decode steps reuse the previous token's position (the counter is not advanced).

    A uniform offset of every position would be harmless under RoPE, which sees only differences.
    """

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch

        def shift(module, args, kwargs):
            input_ids = kwargs.get("input_ids")
            past = _past(kwargs)
            if input_ids.shape[1] == 1 and past > 0:
                kwargs["position_ids"] = torch.tensor([[past - 1]])
            return args, kwargs

        _decoder(self.model).register_forward_pre_hook(shift, with_kwargs=True)


class StaleKVCache(HFAdapter):
    """Decode steps never write their own key/value entries (the slots stay zero)."""

    def prefill(self, tokens):
        from transformers import DynamicCache

        class UnwrittenCache(DynamicCache):
            def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
                if key_states.shape[-2] == 1:
                    key_states, value_states = key_states * 0, value_states * 0
                return super().update(key_states, value_states, layer_idx, cache_kwargs)

        self._step_cache, self._step_position = UnwrittenCache(config=self.model.config), 0
        return self._forward(tokens)


class RightPadding(HFAdapter):
    """Fixed-length prefill padded on the right, logits read at the last (padding) position."""

    block = 16

    def prefill(self, tokens):
        from transformers import DynamicCache

        pad = self.model.config.pad_token_id or 0
        padded = list(tokens) + [pad] * (self.block - len(tokens) % self.block)
        self._step_cache, self._step_position = DynamicCache(config=self.model.config), 0
        return self._forward(padded)


class LeakedPadding(HFAdapter):
    """The last row of a padded batch (the shortest prompt, the most padding) with its padding left
    unmasked: its attention mask all ones, its positions still counted from its first real token."""

    name = "hf-leaked-padding"

    def _batch_inputs(self, prompts):
        ids, mask, positions = super()._batch_inputs(prompts)
        mask[-1] = 1
        return ids, mask, positions


class SkippedLayer(HFAdapter):
    """One decoder layer (the middle one) passes its input through unchanged."""

    def load(self, model, point, settings):
        super().load(model, point, settings)

        def identity(module, args, kwargs, output):
            hidden = args[0] if args else kwargs["hidden_states"]
            return hidden if not isinstance(output, tuple) else (hidden, *output[1:])

        _decoder(self.model).layers[_middle_layer(self.model)].register_forward_hook(identity, with_kwargs=True)


class HeadMapping(HFAdapter):
    """In one layer, the outputs of attention heads 0 and 1 reach the output projection swapped."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        head_dim = self.model.config.head_dim

        def swap(module, args):
            (hidden,) = args
            heads = hidden.view(*hidden.shape[:-1], -1, head_dim).clone()
            heads[..., [0, 1], :] = heads[..., [1, 0], :]
            return (heads.reshape(hidden.shape),)

        layer = _decoder(self.model).layers[_middle_layer(self.model)]
        layer.self_attn.o_proj.register_forward_pre_hook(swap)


class MissingEmbedScale(HFAdapter):
    """The embeddings are not multiplied by the model's ``embed_scale`` (Gemma's sqrt(hidden_size)): a
    Gemma port written like a Llama one. Models without a scale get a wrong one (x 1/8) instead."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        embeddings = self.model.get_input_embeddings()
        scale = float(getattr(embeddings, "embed_scale", 8.0))

        def unscale(module, args, output):
            return output / scale

        embeddings.register_forward_hook(unscale)


class WrongFinalNorm(HFAdapter):
    """The final norm's gain is doubled (Gemma's ``1 + weight`` applied to weights that already hold it)."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        _decoder(self.model).norm.register_forward_hook(lambda module, args, output: output * 2)


FAULTS = [InterleavedRope, PositionOffByOne, StaleKVCache, RightPadding, SkippedLayer, HeadMapping]


class EagerAttention(HFAdapter):
    """Benign: the eager attention implementation instead of SDPA (same math, other kernels and rounding)."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.set_attn_implementation("eager")


BENIGN = [EagerAttention]


class ChunkPositionsRestart(HFAdapter):
    """A chunked prefill whose position counter restarts at 0 in every chunk after the first: the
    fault lives only on the chunked-prefill path (``moe_chunk_size``), so a gate that prefills the
    whole prompt in one forward never runs it."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch

        def restart(module, args, kwargs):
            input_ids = kwargs.get("input_ids")
            if input_ids is not None and input_ids.shape[1] > 1 and _past(kwargs) > 0:
                kwargs["position_ids"] = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
            return args, kwargs

        _decoder(self.model).register_forward_pre_hook(restart, with_kwargs=True)


class PrefillQueryOffset(HFAdapter):
    """A multi-token forward (the prefill) rotates the last layer's queries ``shift`` positions ahead of
    their keys: a prefill attention kernel whose query position ids are off. Keys and values are right, so
    the cache is, and every decode step is exact: only the logits of a prefill are off."""

    shift = 1.0

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch
        head_dim = self.model.config.head_dim
        half = head_dim // 2
        angle = _decoder(self.model).rotary_emb.inv_freq.float() * self.shift
        cos, sin = torch.cat([angle.cos(), angle.cos()]), torch.cat([angle.sin(), angle.sin()])

        def rotate(module, args, output):  # RoPE composes: rotated by p after this, the query sits at p + shift
            if output.shape[1] == 1:  # one token: a decode step
                return output
            heads = output.view(*output.shape[:-1], -1, head_dim).float()
            turned = torch.cat([-heads[..., half:], heads[..., :half]], dim=-1)
            return (heads * cos + turned * sin).to(output.dtype).reshape(output.shape)

        _decoder(self.model).layers[-1].self_attn.q_proj.register_forward_hook(rotate)


class PrefillTailTopSwap(HFAdapter):
    """A prefill of one of ``lengths`` tokens (a kernel's tail case: lengths off its tile) returns logits
    whose top-1 and rank-``rank`` tokens are swapped: its top-1 leaves the reference's top-5 while the
    distribution barely moves. A prefill of any other length, and every decode step, is exact."""

    lengths: frozenset[int] = frozenset()
    rank = 6

    def prefill(self, tokens):
        logits = super().prefill(tokens)
        if len(tokens) not in self.lengths:
            return logits
        import numpy as np

        logits = np.array(logits, copy=True)
        order = np.argsort(-logits, kind="stable")
        first, other = order[0], order[self.rank - 1]
        logits[first], logits[other] = logits[other], logits[first]
        return logits


class PrefillNearTieFlip(HFAdapter):
    """A benign variant of ``PrefillTailTopSwap``: a prefill of one of ``lengths`` tokens returns its top-1 and
    second candidates swapped only where they lie within ``gap`` nats of each other, the flip that rounding makes
    at a near tie; the distribution barely moves. ``flips`` collects (prefix length, gap) of each flip."""

    lengths: frozenset[int] = frozenset()
    gap = 0.08
    flips: list = []

    def prefill(self, tokens):
        logits = super().prefill(tokens)
        if len(tokens) not in self.lengths:
            return logits
        import numpy as np

        logits = np.array(logits, copy=True)
        first, second = np.argsort(-logits, kind="stable")[:2]
        apart = float(logits[first] - logits[second])
        if apart <= self.gap:
            logits[first], logits[second] = logits[second], logits[first]
            self.flips.append((len(tokens), apart))
        return logits


class TailChunkPositionsRestart(HFAdapter):
    """A chunked prefill whose partial tail chunk (shorter than ``moe_chunk_size``, after at least one full
    chunk) gets positions from 0: the fault lives only in the tail, so a gate whose prompts all fit one chunk
    never runs it, and full chunks after the first are exact."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch
        chunk = point.moe_chunk_size or 0

        def restart(module, args, kwargs):
            input_ids = kwargs.get("input_ids")
            if input_ids is not None and 1 < input_ids.shape[1] < chunk and _past(kwargs) > 0:
                kwargs["position_ids"] = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
            return args, kwargs

        _decoder(self.model).register_forward_pre_hook(restart, with_kwargs=True)


class BeamCacheNotReordered(HFAdapter):
    """Beam search that does not reorder the KV cache when it reorders its beams: each beam goes on attending to
    another beam's past. Only ``generate`` with ``num_beams`` > 1 runs it; every greedy and step-wise path is exact."""

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model._reorder_cache = lambda cache, beam_idx: cache  # generate() calls it instead of reorder_cache


class DigitPositionsNoise(HFAdapter):
    """The final hidden state of every position fed a token whose piece holds a digit is perturbed by fixed
    seeded noise of ``scale`` times its size (a kernel path that only numbers take): the logits after a digit
    are off, every other position exact. Only what is predicted after a digit moves (mostly the next digit),
    so the fault averages away among the words unless the gate looks per token class."""

    scale = 0.15

    def load(self, model, point, settings):
        super().load(model, point, settings)
        torch = self._torch
        tokenizer = model.tokenizer()
        vocab = tokenizer.get_vocab_size()
        digits = torch.tensor([any(c.isdecimal() for c in tokenizer.decode([i])) for i in range(vocab)])
        hidden = self.model.config.hidden_size
        noise = torch.randn(vocab, hidden, generator=torch.Generator().manual_seed(0))
        fed = {}

        def remember(module, args, kwargs):
            fed["ids"] = kwargs.get("input_ids")
            return args, kwargs

        def perturb(module, args, output):
            ids = fed.get("ids")
            if ids is None:
                return output
            mask = digits[ids.cpu()].to(output.device)[..., None]
            size = output.float().norm(dim=-1, keepdim=True) / hidden**0.5
            shift = noise[ids.cpu()].to(output.device) * size * self.scale
            return (output.float() + mask * shift).to(output.dtype)

        _decoder(self.model).register_forward_pre_hook(remember, with_kwargs=True)
        _decoder(self.model).norm.register_forward_hook(perturb)
