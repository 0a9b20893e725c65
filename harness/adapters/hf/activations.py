"""The hf adapter's hidden states for the gate's diagnosis: each component's output of one forward, captured
by forward hooks."""

from __future__ import annotations

from typing import Sequence

from harness.adapters.check_outputs import Activations


def hidden_states(adapter, tokens: Sequence[int], decode: bool = False):
    """Each component's output, captured by forward hooks (registered after any other hook, so they
    see what the next module sees). Not ``output_hidden_states``: transformers replaces its last
    entry with the final norm's output, which would make a wrong final norm look like a wrong
    last layer. Models without the usual ``model.layers``/``model.norm`` layout get that list."""
    torch = adapter._torch
    base = getattr(adapter.model, "model", None)
    if getattr(base, "layers", None) is None or getattr(base, "norm", None) is None:
        with torch.inference_mode():
            tensor = torch.tensor([list(tokens)], dtype=torch.long, device=adapter.device)
            out = adapter.model(input_ids=tensor, output_hidden_states=True, use_cache=False)
        return [h[0].float().cpu().numpy() for h in out.hidden_states]
    captured: dict = {}

    def keep(key):
        def hook(module, args, output):
            tensor = output[0] if isinstance(output, tuple) else output
            captured[key] = tensor[0].float().cpu().numpy()

        return hook

    modules = [
        ("embedding", adapter.model.get_input_embeddings()),
        ("norm", base.norm),
        *((index, layer) for index, layer in enumerate(base.layers)),
    ]
    handles = [module.register_forward_hook(keep(key)) for key, module in modules]
    try:
        if decode:
            adapter.prefill(list(tokens[:-1]))
            logits = adapter.decode(int(tokens[-1]))[None, :]
        else:
            with torch.inference_mode():
                tensor = torch.tensor([list(tokens)], dtype=torch.long, device=adapter.device)
                logits = adapter.model(input_ids=tensor, use_cache=False).logits[0].float().cpu().numpy()
    finally:
        for handle in handles:
            handle.remove()
    layers = [captured[index] for index in range(len(base.layers))]
    return Activations(captured["embedding"], layers, captured["norm"], logits)
