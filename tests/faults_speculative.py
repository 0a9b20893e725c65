"""Faults of speculative decoding, injected into the hf adapter's real assisted generation (transformers' own
verify loop): each breaks losslessness in a way real ports do, and only on the speculative path; the plain
path, the step-wise gate and the draft itself stay untouched."""

from __future__ import annotations

from harness.adapters.hf import HFAdapter


def _verify_forward(kwargs) -> bool:
    """A forward over the last accepted token and its candidates, after the prefill."""
    ids, where = kwargs.get("input_ids"), kwargs.get("cache_position")
    return ids is not None and ids.shape[1] >= 2 and where is not None and int(where[0]) > 0


class AcceptsOneTooMany(HFAdapter):
    """The verify step accepts one candidate past the first the target rejected."""

    name = "hf-accepts-extra"

    def load(self, model, point, settings):
        super().load(model, point, settings)

        def accept_one_more(module, args, kwargs, output):
            if not _verify_forward(kwargs):
                return output
            ids, logits = kwargs["input_ids"][0], output.logits[0]
            for j in range(ids.shape[0] - 1):  # logits[j] judge candidate ids[j + 1]
                if int(logits[j].argmax()) != int(ids[j + 1]):
                    logits[j, ids[j + 1]] = logits[j].max() + 1.0
                    break
            return output

        self.model.register_forward_hook(accept_one_more, with_kwargs=True)


class KeepsRejectedKV(HFAdapter):
    """After a rejection the KV cache keeps the rejected candidates' entries (no rollback)."""

    name = "hf-keeps-kv"

    def generate(self, prompts, max_new_tokens):
        from transformers import cache_utils

        crop = cache_utils.DynamicCache.crop
        cache_utils.DynamicCache.crop = lambda cache, max_length: None
        try:
            return super().generate(prompts, max_new_tokens)
        finally:
            cache_utils.DynamicCache.crop = crop


class CandidatesOffByOne(HFAdapter):
    """The verify forward places the candidates one position too far (the last accepted token is right)."""

    name = "hf-offbyone"

    def load(self, model, point, settings):
        super().load(model, point, settings)

        def shift(module, args, kwargs):
            if _verify_forward(kwargs):
                positions = kwargs["cache_position"].clone().unsqueeze(0)
                positions[0, 1:] += 1
                kwargs["position_ids"] = positions
            return args, kwargs

        self.model.register_forward_pre_hook(shift, with_kwargs=True)


FAULTS = (AcceptsOneTooMany, KeepsRejectedKV, CandidatesOffByOne)
