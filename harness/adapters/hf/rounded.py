"""HF transformers rounding as another engine does: an ``ActivationRounding`` (the engine's model of it,
e.g. ``harness.adapters.llamacpp.rounding``) installed on a model that runs that engine's artefact
weights (``harness.adapters.hf.replaced``): each Linear's input is rounded as the engine rounds the input
of a matmul with that weight's stored type, and the attention's Q, K and V as the engine stores them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from harness.adapters.base import ActivationRounding


def _round_input(rounding: Callable):
    def hook(module, args):
        return (rounding(args[0]), *args[1:])

    return hook


def _attention(rounding: Callable) -> str:
    """The name of transformers' SDPA attention with Q, K and V rounded by ``rounding`` (registered once
    per rounding function), with SDPA's masks."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    name = f"harness_rounded_sdpa_{rounding.__module__}_{rounding.__qualname__}".replace(".", "_")

    def attention(module, query, key, value, *args, **kwargs):
        return sdpa_attention_forward(module, rounding(query), rounding(key), rounding(value), *args, **kwargs)

    AttentionInterface.register(name, attention)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name


def install(model, stored: dict, rounding: ActivationRounding) -> int:
    """Round ``model``'s Linear inputs by the stored type of their weight (``stored``: {hf name:
    ``stored_weights.Tensor``}, already loaded into ``model``; a tied head shares its embedding's type) and
    its attention's Q, K, V; returns how many Linear inputs are rounded."""
    import torch

    parameters = dict(model.named_parameters(remove_duplicate=False))
    stored_type = {parameters[name].data_ptr(): t.stored_type for name, t in stored.items() if name in parameters}
    rounded = 0
    for module in model.modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        kind = stored_type.get(module.weight.data_ptr())
        round_input = rounding.inputs(kind) if kind is not None else None
        if round_input is not None:
            module.register_forward_pre_hook(_round_input(round_input))
            rounded += 1
    if rounding.attention is not None:
        model.set_attn_implementation(_attention(rounding.attention))
    return rounded
