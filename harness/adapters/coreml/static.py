"""A static-shape, stateful PyTorch rewrite of a Llama-family decoder: the model Core ML converts.

Fixed context ``max_seq_len``; the KV cache lives in two buffers ``k_cache``/``v_cache``
``[layers, kv_heads, max_seq_len, head_dim]`` that become Core ML *states*; every call takes a
fixed number of tokens (the prefill chunk, or 1 to decode) with their positions and an additive
causal mask, writes their keys/values at those positions with a one-hot update (static shapes, no
dynamic slicing) and returns the logits of every input position. Prompts are prefilled chunk by
chunk; the last chunk is padded, and its padded rows are never attended because the mask hides
positions after the current one.
"""

from __future__ import annotations

import math

import torch
from torch import nn

FAMILIES = ("llama", "qwen2")


class StaticLlama(nn.Module):
    def __init__(self, hf_model, max_seq_len: int, cache_dtype=torch.float16):
        super().__init__()
        config = hf_model.config
        if config.model_type not in FAMILIES:
            raise ValueError(f"the static Core ML rewrite handles {', '.join(FAMILIES)}, not {config.model_type!r}")
        self.config = config
        self.n_heads = config.num_attention_heads
        self.n_kv = config.num_key_value_heads or self.n_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.n_heads
        self.eps = config.rms_norm_eps
        self.max_seq_len = max_seq_len
        self.model = hf_model.model  # weights only; the forward below is ours
        self.lm_head = hf_model.lm_head
        rope = getattr(config, "rope_parameters", None) or {}
        theta = float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
        inv_freq = 1.0 / theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos_table", angles.cos().float(), persistent=False)
        self.register_buffer("sin_table", angles.sin().float(), persistent=False)
        shape = (config.num_hidden_layers, self.n_kv, max_seq_len, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=cache_dtype))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=cache_dtype))

    @staticmethod
    def _rms(x, weight, eps):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    def _rotate_half(self, x):
        half = self.head_dim // 2  # a Python int: shape arithmetic would not convert
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def forward(self, input_ids, positions, causal_mask):
        """input_ids [1, C] int32, positions [C] int32, causal_mask [1, 1, C, max_seq_len] additive -> logits [1, C, V]."""
        x = self.model.embed_tokens(input_ids).float()
        cos = self.cos_table[positions.long()][None, None]
        sin = self.sin_table[positions.long()][None, None]
        onehot = (torch.arange(self.max_seq_len, dtype=torch.int32)[None, :] == positions[:, None]).float()  # [C, S]
        keep = (1.0 - onehot.sum(0))[None, :, None]  # [1, S, 1]
        groups = self.n_heads // self.n_kv
        for i, layer in enumerate(self.model.layers):
            attn = layer.self_attn
            h = self._rms(x, layer.input_layernorm.weight, self.eps)
            q = attn.q_proj(h).view(1, -1, self.n_heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(1, -1, self.n_kv, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(1, -1, self.n_kv, self.head_dim).transpose(1, 2)
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            k_all = self.k_cache[i].float() * keep + torch.matmul(onehot.t(), k[0])  # [kv, S, hd]
            v_all = self.v_cache[i].float() * keep + torch.matmul(onehot.t(), v[0])
            self.k_cache[i] = k_all.to(self.k_cache.dtype)
            self.v_cache[i] = v_all.to(self.v_cache.dtype)
            keys = k_all.repeat_interleave(groups, dim=0)[None]
            values = v_all.repeat_interleave(groups, dim=0)[None]
            scores = torch.matmul(q, keys.transpose(-1, -2)) / math.sqrt(self.head_dim) + causal_mask
            out = torch.matmul(torch.softmax(scores, dim=-1), values)
            x = x + attn.o_proj(out.transpose(1, 2).flatten(2))
            h = self._rms(x, layer.post_attention_layernorm.weight, self.eps)
            mlp = layer.mlp
            x = x + mlp.down_proj(nn.functional.silu(mlp.gate_proj(h)) * mlp.up_proj(h))
        return self.lm_head(self._rms(x, self.model.norm.weight, self.eps))


def causal_mask(positions, max_seq_len: int):
    """Additive mask [1, 1, C, S]: position p sees keys 0..p."""
    allowed = torch.arange(max_seq_len)[None, :] <= positions[:, None].long()
    return torch.where(allowed, 0.0, float("-inf"))[None, None].float()


class StaticRunner:
    """Drives a StaticLlama the way the Core ML package is driven: fixed chunks, padded last chunk."""

    def __init__(self, module: StaticLlama, chunk: int, pad_token_id: int = 0):
        self.module, self.chunk, self.pad = module, chunk, pad_token_id
        self.position = 0

    def reset(self) -> None:
        self.position = 0
        self.module.k_cache.zero_()
        self.module.v_cache.zero_()

    @torch.no_grad()
    def _call(self, tokens: list[int]):
        n = len(tokens)
        positions = torch.arange(self.position, self.position + n, dtype=torch.int32)
        if int(positions[-1]) >= self.module.max_seq_len:
            raise RuntimeError(f"context full: {self.module.max_seq_len} positions")
        logits = self.module(
            torch.tensor([tokens], dtype=torch.int32), positions, causal_mask(positions, self.module.max_seq_len)
        )
        return logits[0]

    def prefill(self, tokens: list[int]):
        self.reset()
        last = None
        for start in range(0, len(tokens), self.chunk):
            part = tokens[start : start + self.chunk]
            real = len(part)
            padded = part + [self.pad] * (self.chunk - real)
            logits = self._call(padded)  # a padded chunk must fit the context too
            self.position += real
            last = logits[real - 1]
        return last.float().numpy()

    def decode(self, token: int):
        logits = self._call([int(token)])
        self.position += 1
        return logits[0].float().numpy()
