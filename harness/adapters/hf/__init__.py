"""``hf``: transformers + PyTorch. The reference engine, and the CPU/CUDA/XPU/MPS baseline.

- ``max_seq_len`` sizes a static KV cache, so every decode step attends over the whole window (the
  static-shape cost model of NPU pipelines); without it the cache grows with the sequence.
- ``beam_width`` maps to ``num_beams``; ``moe_chunk_size`` to chunked prefill.
- ``speculative`` runs transformers' assisted generation (``harness.adapters.hf.speculative``); ``generate_plain``
  the same loaded model without it.
- ``moe_capacity`` (MoE models) caps the tokens each expert takes per forward pass, dropping the least
  salient first (``harness.adapters.hf.moe_capacity``); ``routing`` reports the router's choices for the record
  (``harness.adapters.hf.expert_routing``).
- The gate's step-wise logits (``prefill``/``decode`` on the timed path's cache and chunks): ``harness.adapters.hf.step_logits``.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Optional, Sequence

from harness.adapters.base import Adapter, LoadSettings
from harness.adapters.check_outputs import Beam
from harness.adapters.hf import activations, torch_device
from harness.adapters.hf.expert_routing import HFExpertRouting
from harness.adapters.hf.step_logits import HFStepLogits
from harness.adapters.trace import GenerationTrace, now_ns
from harness.errors import Unsupported

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class HFAdapter(HFStepLogits, HFExpertRouting, Adapter):  # step-wise logits and MoE routing: the mixins
    name = "hf"
    devices = ("cpu", "cuda", "xpu", "mps")
    supports_beams = True
    supports_batch = True
    supports_chunked_prefill = True
    supports_max_seq_len = True
    supports_logits = True
    supports_score = True
    supports_batch_logits = True
    batch_padding = "left"  # generate pads a decoder-only batch on the left
    supports_hidden_states = True
    supports_decode_hidden_states = True
    supports_path_hidden_states = True  # through prefill()/decode(): the timed path's cache and chunks
    supports_routing = True  # routing() returns None for dense models
    supports_moe_capacity = True
    engine_modules = ("torch", "transformers")

    def can_serve(self, loaded, point, settings: LoadSettings) -> bool:
        # The prompt is the only axis the loaded model takes per call; beams, batch and cache shape are fixed
        # at load (generation config, static cache).
        return self.differs_only_in(loaded, point, frozenset({"prompt_len"}))

    @classmethod
    def capability_reason(cls, point) -> Optional[str]:
        if point.speculative != "none" and point.max_seq_len is not None:  # transformers refuses it
            return f"hf's assisted generation needs a dynamic cache (speculative with max_seq_len={point.max_seq_len})"
        return super().capability_reason(point)

    @classmethod
    def available(cls) -> tuple[bool, str]:
        missing = [m for m in ("torch", "transformers") if find_spec(m) is None]
        if missing:
            return False, f"{', '.join(missing)} not installed: pip install 'harness[hf]'"
        return True, "transformers + torch"

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        ok, why = cls.available()
        if not ok:
            return why
        if device == "cpu":
            return None
        import torch  # only non-CPU devices need torch to answer

        backend = getattr(torch, device, None)
        if backend is None or not backend.is_available():
            return f"torch {torch.__version__} sees no {device} device"
        return None

    @classmethod
    def model_failure(cls, spec, cache_dir: Optional[Path] = None) -> Optional[str]:
        from harness.models import transformers_check

        unknown = transformers_check.unknown_model_type(spec)
        if unknown is None:
            return None
        config, what = unknown
        return f"{config}: checkpoint load (transformers): {what}; {transformers_check.advice(spec)}"

    def load(self, model, point, settings: LoadSettings) -> None:
        import torch

        from harness.adapters.hf.imports import import_generation

        import_generation()  # before transformers' models import it: without scikit-learn
        from transformers import AutoModelForCausalLM, StoppingCriteria
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        if settings.threads:
            torch.set_num_threads(settings.threads)
        self._torch = torch
        self.point, self.settings = point, settings
        self.device = torch.device(point.device)
        self.dtype = getattr(torch, _DTYPES[settings.dtype])
        from harness.errors import step

        with step(model.hf_dir, "checkpoint load (transformers)"):
            self.model = (
                AutoModelForCausalLM.from_pretrained(
                    str(model.hf_dir),
                    dtype=self.dtype,
                    attn_implementation="sdpa",
                    trust_remote_code=settings.trust_remote_code,
                )
                .to(self.device)
                .eval()
            )
        self.model.generation_config.disable_compile = True  # measure eager kernels, not a compile
        self._stop_ids = model.stop_token_ids()  # a chat model's end of turn too, where its config names EOS only
        self._step_cache, self._step_position = None, 0
        self.monitor = self._capacity_monitor(model, point)

        adapter = self

        class StepClock(StoppingCriteria):
            """Runs once per step, right after the step's tokens are chosen: one timestamp, nothing else."""

            def __init__(self):
                self.times: list[int] = []
                self._never = None
                # decided once per generation, not per step: CPU tokens are on the host already
                self._sync = adapter.synchronize if adapter.device.type != "cpu" else None

            def __call__(self, input_ids, scores, **kwargs):
                if self._sync is not None:
                    self._sync()
                self.times.append(now_ns())
                if self._never is None or self._never.shape[0] != input_ids.shape[0]:
                    self._never = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
                return self._never

        self._clock_cls = StepClock
        from harness.adapters.hf.speculative import Drafting

        self.drafting = Drafting.load(self, settings)

    def _new_cache(self):
        from transformers import DynamicCache, StaticCache

        if self.point.max_seq_len is not None:
            return StaticCache(config=self.model.config, max_cache_len=self.point.max_seq_len)
        if self.point.moe_chunk_size:  # chunked prefill needs the cache up front
            return DynamicCache(config=self.model.config)
        return None  # transformers creates its default dynamic cache

    def _generate_kwargs(self, input_ids, max_new_tokens: int, beams: int, forced: bool = True) -> dict:
        """``generate``'s settings on the timed path: its cache, prefill chunks, and (``forced``) a forced length."""
        kwargs = dict(
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens if forced else 0,  # EOS must not shorten timed runs
            do_sample=False,
            num_beams=beams,
            attention_mask=self._torch.ones_like(input_ids),
        )
        if self.point.moe_chunk_size:
            kwargs["prefill_chunk_size"] = self.point.moe_chunk_size
        cache = self._new_cache()
        if cache is not None:
            kwargs["past_key_values"] = cache
        return kwargs

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        if self.drafting is not None:
            return self.drafting.generate(prompts, max_new_tokens)
        return self.generate_plain(prompts, max_new_tokens)

    def generate_plain(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        torch = self._torch
        lengths = {len(p) for p in prompts}
        if len(lengths) != 1:
            raise ValueError(f"hf adapter batches prompts of equal length only, got lengths {sorted(lengths)}")
        input_ids = torch.tensor([list(p) for p in prompts], dtype=torch.long, device=self.device)
        kwargs = self._generate_kwargs(input_ids, max_new_tokens, self.point.beam_width)
        clock = self._clock_cls()
        with torch.inference_mode():
            self.synchronize()
            start = now_ns()
            output = self.model.generate(input_ids, stopping_criteria=[clock], **kwargs)
        prompt_tokens = input_ids.shape[1]
        return GenerationTrace(
            start_ns=start,
            token_ns=clock.times,
            prompt_tokens=prompt_tokens,
            batch_size=input_ids.shape[0],
            output_ids=output[:, prompt_tokens:].tolist(),
        )

    def _fits(self, positions: int) -> None:
        limit = self.point.max_seq_len
        if limit is not None and positions > limit:
            raise Unsupported(f"{positions} positions do not fit the static cache (max_seq_len={limit})")

    def generate_until_stop(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """``generate``, greedy on the timed path's cache and chunks, stopping at the model's EOS and end-of-turn
        ids (``ResolvedModel.stop_token_ids``) instead of running to a forced length."""
        self._fits(len(prompt_ids) + max_new_tokens)
        torch = self._torch
        input_ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.device)
        kwargs = self._generate_kwargs(input_ids, max_new_tokens, 1, forced=False)
        kwargs["eos_token_id"] = self._stop_ids
        with torch.inference_mode():
            output = self.model.generate(input_ids, **kwargs)
        return output[0, input_ids.shape[1] :].tolist()

    def beam_search(self, prompt_ids: Sequence[int], max_new_tokens: int, width: int) -> Beam:
        """``generate``'s beam search on the timed path's settings (cache, chunks, forced length), untimed."""
        self._fits(len(prompt_ids) + max_new_tokens)
        torch = self._torch
        input_ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.device)
        kwargs = self._generate_kwargs(input_ids, max_new_tokens, width)
        with torch.inference_mode():
            out = self.model.generate(input_ids, return_dict_in_generate=True, output_scores=True, **kwargs)
        penalty = self.model.generation_config.length_penalty
        penalty = 1.0 if penalty is None else float(penalty)  # unset: transformers' default
        return Beam(
            tokens=out.sequences[0, input_ids.shape[1] :].tolist(),
            score=float(out.sequences_scores[0]),
            length_penalty=penalty,
        )

    def gate_path(self) -> dict:
        """The step-wise path the gate reads: the timed path's cache and prefill chunking."""
        return {
            "device": self.point.device,
            "config": {"dtype": self.settings.dtype, "attn_implementation": self.model.config._attn_implementation},
            "cache": f"static({self.point.max_seq_len})" if self.point.max_seq_len else "dynamic",
            "prefill_chunk": self.point.moe_chunk_size,
        }

    def hidden_states(self, tokens: Sequence[int], decode: bool = False):
        """Each component's output (``harness.adapters.hf.activations``)."""
        return activations.hidden_states(self, tokens, decode)

    def device_memory(self):
        return torch_device.memory(self._torch, self.device)

    def reset_device_memory_peak(self) -> None:
        torch_device.reset_memory_peak(self._torch, self.device)

    def weight_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    def synchronize(self) -> None:
        torch_device.synchronize(self._torch, self.device)

    def describe(self):
        import torch
        import transformers

        from harness.records.engine import EngineInfo

        return EngineInfo(
            name="transformers",
            version=transformers.__version__,
            device=self.point.device,
            device_name=torch_device.name(torch, self.device),
            driver=torch_device.driver(self.device),
            dtype=self.settings.dtype,
            threads=torch.get_num_threads(),
            extra={
                "torch_version": torch.__version__,
                "weights_dtype": str(self.model.dtype),  # what the loaded model holds: the id's dtype, checked
                "attn_implementation": self.model.config._attn_implementation,
                "kv_cache": f"static({self.point.max_seq_len})" if self.point.max_seq_len else "dynamic",
            },
        )

    def close(self) -> None:
        if getattr(self, "drafting", None) is not None:
            self.drafting.close()
        self.model = None
        self._step_cache = None
