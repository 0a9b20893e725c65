"""What an adapter can run and which optional methods it has: class flags, decided before anything loads.

Axis capabilities: a sweep axis's ``Capability`` (``harness.scenario.schema.Sweep``) names the flag its
non-default values need, and ``capability_reason`` reads it. Optional methods: one flag each
(``OPTIONAL_METHODS``), derived from the methods a class overrides (``harness.adapters.base.Adapter``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Optional

from harness.scenario.schema import SWEEP_AXES

if TYPE_CHECKING:
    from harness.scenario.sweep import Point


class Capabilities:
    """The flags ``Adapter`` inherits: an adapter class sets the ones its engine has."""

    name: ClassVar[str]
    quantizations: ClassVar[frozenset[str]] = frozenset({"none"})
    # Axis capabilities: a sweep axis's Capability (harness.scenario.schema.Sweep) names the flag its
    # non-default values need, and capability_reason reads it.
    supports_beams: ClassVar[bool] = False
    supports_batch: ClassVar[bool] = False
    supports_chunked_prefill: ClassVar[bool] = False
    supports_max_seq_len: ClassVar[bool] = False  # True: max_seq_len sizes a static KV cache
    supports_moe_capacity: ClassVar[bool] = False  # True: can cap tokens per expert (moe_capacity)
    # Optional methods, one flag each (see OPTIONAL_METHODS). Callers read the flag, never call and
    # catch. A class that leaves a flag unset gets True exactly when it overrides the flag's methods;
    # an adapter whose support depends on the loaded point narrows the flag on the instance in load().
    supports_logits: bool = False  # prefill()/decode(): step-wise fp32 logits (the full gate)
    supports_score: bool = False  # score(): every position's logits in one pass (task accuracy)
    supports_forced_top1: bool = False  # teacher_forced_top1(): chosen tokens only (the top-1 gate)
    supports_hidden_states: bool = False  # hidden_states(): per-layer states (gate diagnosis)
    # hidden_states(tokens, decode=True): the states of a decode step with the cache filled (diagnosis
    # of faults that touch only decode steps). A plain flag: it refines supports_hidden_states.
    supports_decode_hidden_states: ClassVar[bool] = False
    # hidden_states() follows the point's timed path (its cache kind, prefill chunks and padding, as prefill()
    # runs them); False: one forward without cache, which a fault on the prefill path never runs
    supports_path_hidden_states: ClassVar[bool] = False
    supports_routing: bool = False  # routing(): tokens per expert (MoE models)
    supports_tokenize: bool = False  # tokenize()/detokenize(): the engine's own tokenizer (text path checks)
    supports_chat_template: bool = False  # chat_prompt(): the text the engine's own chat API would feed it
    supports_batch_logits: bool = False  # prefill_batch(): last-position logits per sequence of one batch
    supports_text_generation: bool = False  # generate_text(): the engine's text-in, text-out API
    supports_beam_search: bool = False  # beam_search(): the best beam and its score (the beam check)
    supports_stopping: bool = False  # generate_until_stop(): greedy, ending at the engine's own stop tokens
    # generate_plain(): the loaded target without its draft (the speculative axis: the side-by-side timing and
    # the greedy-equality gate); a class flag, as the axis's Capability reads it before anything loads
    supports_speculative: bool = False
    _declared_flags: ClassVar[frozenset[str]] = frozenset()  # the flags a class sets itself

    @classmethod
    def capability_reason(cls, point: Point) -> Optional[str]:
        """Why ``point`` can never run on this adapter, on any machine (no device probing), or None."""
        if point.quantization not in cls.quantizations:
            return f"{cls.name} does not support quantization {point.quantization!r} (supports: {', '.join(sorted(cls.quantizations))})"
        for axis in SWEEP_AXES:  # each axis declares the flag a non-default value needs
            value = getattr(point, axis.name)
            if axis.needs is not None and value != axis.default and not getattr(cls, axis.needs.flag):
                return f"{cls.name} {axis.needs.lacking} ({axis.name}={value})"
        if cls.supports_speculative:
            from harness.adapters.speculation import speculation_reason

            return speculation_reason(cls.name, cls.quantizations, point)
        return None


# Each optional capability's flag and the methods that provide it.
OPTIONAL_METHODS: dict[str, tuple[str, ...]] = {
    "supports_logits": ("prefill", "decode"),
    "supports_score": ("score",),
    "supports_forced_top1": ("teacher_forced_top1",),
    "supports_hidden_states": ("hidden_states",),
    "supports_routing": ("routing",),
    "supports_tokenize": ("tokenize", "detokenize"),
    "supports_chat_template": ("chat_prompt",),
    "supports_batch_logits": ("prefill_batch",),
    "supports_text_generation": ("generate_text",),
    "supports_beam_search": ("beam_search",),
    "supports_stopping": ("generate_until_stop",),
    "supports_speculative": ("generate_plain",),
}
