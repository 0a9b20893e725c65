"""HF transformers rounding as another engine does: an ``ActivationRounding`` (the engine's model of it,
e.g. ``harness.adapters.llamacpp.rounding``) installed on a model that runs that engine's artefact
weights (``harness.adapters.hf.replaced``): each Linear's input is rounded as the engine rounds the input
of a matmul with that weight's stored type, and the attention's Q, K and V as the engine stores them; for an
engine that computes in a lower precision throughout, every weight matrix and every tensor between ops too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from harness.adapters.trusted_twin import ActivationRounding


def _round_input(rounding: Callable):
    def hook(module, args):
        return (rounding(args[0]), *args[1:])

    return hook


def _round_output(rounding: Callable):
    import torch

    def hook(module, args, output):
        if isinstance(output, torch.Tensor):
            return rounding(output)
        if isinstance(output, tuple) and output and isinstance(output[0], torch.Tensor):
            return (rounding(output[0]), *output[1:])
        return None

    return hook


def _between_ops(model) -> list:
    """The modules whose outputs are the tensors an engine passes between its ops: each Linear, embedding,
    norm and decoder layer (the residual stream); a module's inner arithmetic stays fp32, as a fused op's."""
    import torch

    layers = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]
    return [
        module
        for module in model.modules()
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding))
        or "norm" in type(module).__name__.lower()
        or any(module is layer for parent in layers for layer in parent)
    ]


def _round_throughout(model, rounding: ActivationRounding, as_stored: set[int]) -> None:
    """A lower-precision engine's weights (every Linear's and embedding's matrix as its kernels read it, but
    those in ``as_stored``, by ``data_ptr``) and activations (each Linear's input, and each op's output,
    ``_between_ops``)."""
    import torch

    if rounding.weights is not None:
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)) and (
                    module.weight.data_ptr() not in as_stored
                ):
                    module.weight.copy_(rounding.weights(module.weight))
    if rounding.activations is not None:
        for module in _between_ops(model):
            if isinstance(module, torch.nn.Linear):
                module.register_forward_pre_hook(_round_input(rounding.activations))
            module.register_forward_hook(_round_output(rounding.activations))


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
    ``stored_weights.Tensor``}, already loaded into ``model``; a tied head shares its embedding's type), its
    attention's Q, K, V, and its weights and activations where ``rounding`` rounds them; returns how many
    Linear inputs are rounded by their stored type."""
    import torch

    parameters = dict(model.named_parameters(remove_duplicate=False))
    stored_type = {parameters[name].data_ptr(): t.stored_type for name, t in stored.items() if name in parameters}
    quantized = {}  # Linear -> the rounding of its input
    for module in model.modules():
        kind = stored_type.get(module.weight.data_ptr()) if isinstance(module, torch.nn.Linear) else None
        round_input = rounding.inputs(kind) if kind is not None else None
        if round_input is not None:
            quantized[module] = round_input
    # The precision's own rounding first (pre-hooks run in the order registered): an engine that quantizes a
    # matmul's input quantizes the tensor it holds at its precision, and multiplies it with the weight as
    # stored (integers and their scales), not the weight at its precision (OpenVINO at bf16 on AMD Zen 4).
    _round_throughout(model, rounding, {module.weight.data_ptr() for module in quantized})
    for module, round_input in quantized.items():
        module.register_forward_pre_hook(_round_input(round_input))
    if rounding.attention is not None:
        model.set_attn_implementation(_attention(rounding.attention))
    return len(quantized)
