"""The hf adapter's hidden states for the gate's diagnosis: each component's output, captured by forward hooks
while the adapter's own step-wise ``prefill``/``decode`` run, so they follow the point's timed path (its
static or dynamic cache, its prefill chunks, and any padding the prefill adds) as the gate's logits do."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness.adapters.check_outputs import Activations


def _real_rows(fed: list[int], tokens: Sequence[int]) -> Optional[int]:
    """Where ``tokens`` start among the ``fed`` ids of a padded forward (the padding around them), or None."""
    n = len(tokens)
    return next((at for at in range(len(fed) - n + 1) if fed[at : at + n] == list(tokens)), None)


def path_name(adapter) -> str:
    """The path the states were taken on, in words (the record's ``diagnosis.path``)."""
    limit, chunk = adapter.point.max_seq_len, adapter.point.moe_chunk_size
    cache = f"static cache ({limit})" if limit is not None else "dynamic cache"
    return cache + (f", prefill chunks of {chunk}" if chunk else "")


def hidden_states(adapter, tokens: Sequence[int], decode: bool = False):
    """Each component's output, captured by forward hooks (registered after any other hook, so they see what the
    next module sees) on every forward the step-wise path runs: the prefill's chunks concatenated in order
    (``Activations.forwards`` holds each one's rows), or the one decode step. Not ``output_hidden_states``:
    transformers replaces its last entry with the final norm's output, which would make a wrong final norm look
    like a wrong last layer. The logits are those the step-wise path returned, what the gate read: the last
    position's. A prefill that ran more positions than ``tokens`` (padding) keeps the rows of the real tokens
    and says how many it ran (``Activations.ran``). Models without the usual ``model.layers``/``model.norm``
    layout get the plain list of one forward without cache."""
    torch = adapter._torch
    base = getattr(adapter.model, "model", None)
    if getattr(base, "layers", None) is None or getattr(base, "norm", None) is None:
        with torch.inference_mode():
            tensor = torch.tensor([list(tokens)], dtype=torch.long, device=adapter.device)
            out = adapter.model(input_ids=tensor, output_hidden_states=True, use_cache=False)
        return [h[0].float().cpu().numpy() for h in out.hidden_states]
    captured: dict = {}
    fed: list[list[int]] = []

    def keep(key):
        def hook(module, args, output):
            tensor = output[0] if isinstance(output, tuple) else output
            captured.setdefault(key, []).append(tensor[0].float().cpu().numpy())

        return hook

    def ids(module, args, kwargs):
        given = kwargs.get("input_ids", args[0] if args else None)
        fed.append([] if given is None else given[0].tolist())

    modules = [
        ("embedding", adapter.model.get_input_embeddings()),
        ("norm", base.norm),
        *((index, layer) for index, layer in enumerate(base.layers)),
    ]
    handles = [module.register_forward_hook(keep(key)) for key, module in modules]
    handles.append(base.register_forward_pre_hook(ids, with_kwargs=True))
    try:
        if decode:
            adapter.prefill(list(tokens[:-1]))
            captured.clear()  # the decode step's states alone
            logits = adapter.decode(int(tokens[-1]))
        else:
            start = len(fed)
            logits = adapter.prefill(list(tokens))
            fed = fed[start:]
    finally:
        for handle in handles:
            handle.remove()
    logits = np.asarray(logits, dtype=np.float32)[None, :]

    def joined(key):
        return np.concatenate(captured[key]) if not decode else captured[key][-1]

    layers = [joined(index) for index in range(len(base.layers))]
    found = Activations(joined("embedding"), layers, joined("norm"), logits, path=path_name(adapter))
    if decode:
        return found
    found.forwards = [len(f) for f in fed]
    run = [t for f in fed for t in f]
    if len(run) != len(tokens):  # padded: keep the real tokens' rows
        at = _real_rows(run, tokens)
        found.ran = len(run)
        if at is not None:
            rows = slice(at, at + len(tokens))
            found.embedding, found.final_norm = found.embedding[rows], found.final_norm[rows]
            found.layers = [layer[rows] for layer in found.layers]
            ends = np.cumsum(found.forwards)  # each forward's share of the real rows
            found.forwards = [
                max(0, min(end, at + len(tokens)) - max(end - n, at)) for end, n in zip(ends, found.forwards)
            ]
    return found
