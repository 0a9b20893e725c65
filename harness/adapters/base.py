"""The adapter protocol: what every engine implements so that a new engine is one file.

The capability flags live in ``harness.adapters.capabilities``, the timed result of ``generate`` and the
clock in ``harness.adapters.trace``, what ``trusted_twin`` returns in ``harness.adapters.trusted_twin``, what
``hidden_states`` and ``beam_search`` return in ``harness.adapters.check_outputs``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

from harness.adapters.capabilities import OPTIONAL_METHODS, Capabilities
from harness.adapters.check_outputs import Activations, Beam
from harness.adapters.engine_options import AdapterOptions
from harness.adapters.trace import GenerationTrace
from harness.adapters.trusted_twin import Twin
from harness.errors import Unsupported

if TYPE_CHECKING:
    import numpy as np

    from harness.models.sources import ResolvedModel
    from harness.records.engine import EngineInfo
    from harness.scenario.sweep import Point


@dataclass(frozen=True)
class LoadSettings:
    """What ``load`` needs besides the point: scenario-level settings."""

    dtype: str = "bf16"
    threads: Optional[int] = None
    max_new_tokens: int = 32
    cache_dir: Optional[str] = None
    quantization: dict = field(default_factory=dict)  # scenario's quantization_options (group size, ratio)
    trust_remote_code: bool = False  # only when the scenario asks and the command line confirms
    options: AdapterOptions = field(default_factory=AdapterOptions)  # adapter_options.<name>, as the adapter's Options
    # The point's draft model (speculative: {draft: ...}), resolved and checked to share the target's
    # tokenizer (harness.run.steps.draft); None for every other point.
    draft: Optional[ResolvedModel] = None


class Adapter(Capabilities, ABC):
    """Base class for engine adapters. Subclasses set the class attributes (the capability flags:
    ``harness.adapters.capabilities``) and implement the methods.

    Class-level methods (``available``, ``device_status``, ``supports``) must not import the engine
    beyond a cheap ``find_spec``; the engine is imported in ``load``.
    """

    name: ClassVar[str]
    devices: ClassVar[tuple[str, ...]]  # every device name this adapter understands
    # Modules a worker imports once, before its first point, so their import time is paid (and
    # accounted as "imports") once per worker rather than inside a point's load.
    engine_modules: ClassVar[tuple[str, ...]] = ()
    # The scenario's ``adapter_options.<name>`` for this adapter, checked before any point runs (an unknown
    # key is refused naming the closest valid one); ``load`` gets them validated as ``settings.options``.
    Options: ClassVar[type[AdapterOptions]] = AdapterOptions
    # Where ``prefill_batch`` pads the shorter prompts of a batch ("left", "right"), as the engine's batched
    # generation does; recorded by the batch-invariance check.
    batch_padding: ClassVar[Optional[str]] = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._declared_flags = frozenset(flag for flag in OPTIONAL_METHODS if flag in vars(cls))
        for flag, methods in OPTIONAL_METHODS.items():
            if not any(flag in vars(klass).get("_declared_flags", ()) for klass in cls.__mro__):
                setattr(cls, flag, all(getattr(cls, m) is not getattr(Adapter, m) for m in methods))

    @classmethod
    def knows_device(cls, device: str) -> bool:
        return device in cls.devices

    @classmethod
    @abstractmethod
    def available(cls) -> tuple[bool, str]:
        """(True, engine description) when the engine can be imported here, else (False, why not)."""

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        """None when ``device`` is usable here, else the reason it is not. Override per engine."""
        ok, why = cls.available()
        return None if ok else why

    @classmethod
    def device_status(cls) -> dict[str, Optional[str]]:
        return {device: cls.device_reason(device) for device in cls.devices}

    @classmethod
    def supports(cls, point: Point) -> Optional[str]:
        """Why this adapter cannot run ``point`` here (decided before anything loads), or None."""
        if not cls.knows_device(point.device):
            return f"{cls.name} has no device {point.device!r} (its devices: {', '.join(cls.devices)})"
        return cls.capability_reason(point) or (
            f"{cls.name}:{point.device} unavailable: {reason}" if (reason := cls.device_reason(point.device)) else None
        )

    @classmethod
    def native_precision(cls, spec, device: str) -> Optional[str]:
        """The precision this adapter runs ``spec`` (a ``ModelSpec``) at on ``device`` when the sweep's
        quantization is ``none``, where that is not ``model.dtype`` (llama.cpp runs a GGUF's own file type,
        OpenVINO the device plugin's inference precision): the point id and the report say it. Decided
        before anything loads; None: ``model.dtype``."""
        return None

    @classmethod
    def model_reason(cls, spec, cache_dir: Optional[Path] = None) -> Optional[str]:
        """Why this adapter will skip ``spec`` (a ``ModelSpec``) on every point, found without loading weights
        (llama.cpp's converter refusing its architecture): ``harness check`` says so before any point runs.
        ``cache_dir``: the run's cache (None: the default), for what the look-up keeps. None: it will try."""
        return None

    @classmethod
    def model_failure(cls, spec, cache_dir: Optional[Path] = None) -> Optional[str]:
        """Why every point of this adapter on ``spec`` will fail while it prepares (a step that cannot take the
        checkpoint: transformers not knowing its architecture, a tokenizer OpenVINO's converter refuses), found
        without loading weights: ``harness check`` lists the points as ``will fail:`` before any runs. One line
        naming the file and the step, as the run's failure would; None: not predicted."""
        return None

    @abstractmethod
    def load(self, model: ResolvedModel, point: Point, settings: LoadSettings) -> None:
        """Load (converting/compiling as needed, with cached conversions) the model for ``point``."""

    @abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        """Generate exactly ``max_new_tokens`` per prompt (EOS does not stop it), timing every step.

        ``prompts`` holds one prompt per sequence of the batch.
        """

    def generate_plain(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        """Optional (``supports_speculative``): ``generate`` on the loaded target without speculation, same
        engine and settings otherwise (a point's ``speculative`` value makes ``generate`` speculate, and the
        trace's ``speculation`` count its verify steps)."""
        raise Unsupported(f"{self.name} has no speculative decoding")

    def prefill(self, tokens: Sequence[int]) -> np.ndarray:
        """Optional (``supports_logits``): reset state, run the prompt, return fp32 logits of the last
        position, shape [vocab]."""
        raise Unsupported(f"{self.name} exposes no step-wise logits")

    def decode(self, token: int) -> np.ndarray:
        """Optional (``supports_logits``): append one token to the state from ``prefill``/``decode``;
        return its fp32 logits [vocab]."""
        raise Unsupported(f"{self.name} exposes no step-wise logits")

    def score(self, tokens: Sequence[int], last: int) -> np.ndarray:
        """Optional (``supports_score``): fp32 logits of the ``last`` positions of ``tokens`` in one
        pass, shape [last, vocab] (task accuracy's teacher forcing; without it, prefill + one decode per
        token does the same work)."""
        raise Unsupported(f"{self.name} has no one-pass scoring")

    def teacher_forced_top1(self, prompt_ids: Sequence[int], tokens: Sequence[int]) -> list[int]:
        """Optional (``supports_forced_top1``), for engines without step-wise logits: the token the
        engine chooses at each position of ``tokens`` when given ``prompt_ids + tokens[:i]``."""
        raise Unsupported(f"{self.name} exposes neither step-wise logits nor forced top-1 tokens")

    def hidden_states(self, tokens: Sequence[int], decode: bool = False) -> list[np.ndarray] | Activations:
        """Optional (``supports_hidden_states``): fp32 hidden states [seq, hidden] of one forward over
        ``tokens``: the embeddings first, then each decoder layer's output (before the final norm). An
        ``Activations`` adds the final norm's output and the logits, so a diagnosis can tell them from
        the last layer. ``decode=True`` (only where ``supports_decode_hidden_states``): prefill
        ``tokens[:-1]`` with the step-wise path, then return the states of the decode step that feeds
        ``tokens[-1]`` ([1, hidden] each). Where ``supports_path_hidden_states``, the prefill's states too
        are taken on the step-wise path (the point's cache, chunks and padding), and the ``Activations``
        say so (``path``, ``forwards``, ``ran``)."""
        raise Unsupported(f"{self.name} does not expose hidden states")

    def can_serve(self, loaded: Point, point: Point, settings: LoadSettings) -> bool:
        """Whether this engine, loaded for ``loaded`` with ``settings``, can run ``point`` (same model and
        load settings: the caller checks those) without reloading and without changing what is measured.
        Default: no; an adapter says yes for axes its loaded engine takes per call (a prompt length),
        never for ones fixed at load (precision, quantization, a static KV size, a compiled graph)."""
        return False

    @staticmethod
    def differs_only_in(loaded: Point, point: Point, axes: frozenset[str]) -> bool:
        """True when the two points' axes are equal apart from ``axes``."""
        return all(value == getattr(point, axis) for axis, value in loaded.axes().items() if axis not in axes)

    def runs_quantized(self, point: Point) -> bool:
        """True when the point runs an approximation of the model (quantized weights, or experts with
        a capped capacity), so drift from the reference is expected (the gate's ``fail_on_drift:
        auto``). Engines whose "unquantized" model is quantized say so here."""
        return point.quantization != "none" or point.moe_capacity is not None

    def trusted_twin(self) -> Twin | str:
        """Optional: the loaded point's own weights on a trusted engine path (the same-weights
        reference, for quantized points), or why there is none. Called after ``load``; builds and
        loads nothing until the twin is opened."""
        return f"{self.name} has no trusted twin: no second engine path runs this point's own weights"

    def gate_path(self) -> dict:
        """The engine path the gate's step-wise figures (or forced tokens) come from, as the record's
        ``correctness.path`` (``GatePath`` fields: device, config, cache, prefill_chunk, notes). Engines that
        gate the very path they time say how; the default says only that this engine does not."""
        point = getattr(self, "point", None)
        return {
            "device": point.device if point is not None else "?",
            "notes": [f"{self.name} does not say whether its step-wise path is the timed one"],
        }

    def routing(self, prompts: Sequence[Sequence[int]]) -> Optional[dict]:
        """Optional (``supports_routing``), for MoE models: tokens routed per layer and expert over a
        prefill of ``prompts`` (see ``RoutingMonitor.summary``), or None where the model is dense."""
        return None

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        """Optional (``supports_tokenize``): the engine's own tokenizer on ``text`` as its completion API
        runs it: special-token text parsed as such, and with ``add_special`` the prefix it adds (e.g. BOS;
        a ``chat_prompt`` text holds its own, so it is tokenized without)."""
        raise Unsupported(f"{self.name} has no tokenizer of its own")

    def detokenize(self, ids: Sequence[int]) -> str:
        """Optional (``supports_tokenize``): the engine's own detokenizer (special tokens left out)."""
        raise Unsupported(f"{self.name} has no detokenizer of its own")

    def chat_prompt(self, messages: Sequence[dict]) -> str:
        """Optional (``supports_chat_template``): the prompt text the engine's own chat API builds from
        ``messages`` (role/content dicts), with the generation prompt, as it resolves its template; every
        special token it feeds (a BOS too) written out as text."""
        raise Unsupported(f"{self.name} has no chat template of its own")

    def chat_template_source(self) -> str:
        """Where the engine's chat template came from (for the record), e.g. "llama-2 (fallback)"."""
        return "unknown"

    def generate_text(self, text: str, chat: bool, max_new_tokens: int) -> str:
        """Optional (``supports_text_generation``): the engine's own text API, greedy, stopping at EOS:
        ``text`` in (through the engine's chat template when ``chat``), generated text out, the engine's
        tokenizer and detokenizer inside (the text-path check's free-running text)."""
        raise Unsupported(f"{self.name} has no text-in, text-out API of its own")

    def generate_until_stop(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """Optional (``supports_stopping``): greedy generation on one prompt that ends where the engine's own
        stopping ends it (its EOS and end-of-turn tokens), at most ``max_new_tokens``: the generated ids, the stop
        token included where it stopped (the stopping check, ``harness.correctness.stopping``, and the text
        path's free-running text; ``generate`` forces its length and is never judged on its stops)."""
        raise Unsupported(f"{self.name} exposes no generation that stops by itself")

    def beam_search(self, prompt_ids: Sequence[int], max_new_tokens: int, width: int) -> Beam:
        """Optional (``supports_beam_search``): the engine's beam search of ``width`` beams on one prompt, as
        ``generate`` times it (exactly ``max_new_tokens`` per beam: EOS does not end a beam), returning the best
        beam (the beam check, ``harness.correctness.beams``)."""
        raise Unsupported(f"{self.name} exposes no beam search output")

    def prefill_batch(self, prompts: Sequence[Sequence[int]]) -> np.ndarray:
        """Optional (``supports_batch_logits``): run ``prompts`` (of any lengths) as one batch, padded as the
        engine's batched generation pads (``batch_padding``); fp32 logits of each sequence's last real
        position, shape [batch, vocab] (the batch-invariance check)."""
        raise Unsupported(f"{self.name} exposes no batched logits")

    def weight_bytes(self) -> Optional[int]:
        """Bytes of weights a decode step reads, at their stored precision (for the roofline)."""
        return None

    def device_memory(self) -> tuple[Optional[float], Optional[str]]:
        """(peak device memory in MiB since the last ``reset_device_memory_peak``, None) or (None, why it is
        not known)."""
        return None, f"{self.name} exposes no device memory figure"

    def reset_device_memory_peak(self) -> None:  # noqa: B027 - optional hook: most engines keep no peak
        """Start a new peak for ``device_memory`` (called when each point starts: allocators such as CUDA's
        keep one peak per process, which a persistent worker or a reused engine would carry over)."""

    def load_figures(self) -> dict:
        """Timings of ``load`` worth keeping apart from latency (export, compile, cache state)."""
        return {}

    def synchronize(self) -> None:  # noqa: B027 - optional hook: synchronous engines have nothing to wait for
        """Wait until the device has finished queued work (no-op for synchronous engines)."""

    @abstractmethod
    def describe(self) -> EngineInfo:
        """The engine that ran (``harness.records.engine.EngineInfo``): its name and version, the device, its
        name and driver, the precision and threads actually in use; engine-specific facts under ``extra``.
        (A plain dict of the same facts is still read, as an older record's is.)"""

    def close(self) -> None:  # noqa: B027 - optional hook: an engine freed by garbage collection needs none
        """Release the model and device memory."""


class PointSkipped(Exception):
    """Raised by ``load`` when this point cannot run with this model here (the message says why and
    what to give instead); the point is recorded as skipped, not failed."""
