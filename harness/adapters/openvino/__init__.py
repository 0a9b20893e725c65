"""``openvino``: OpenVINO GenAI on Intel CPU/GPU/NPU, with NNCF weight compression.

- Conversion: optimum-intel exports the HF checkpoint to a stateful IR and openvino-tokenizers
  converts its tokenizer; NNCF compresses weights for the quantization axis. Each artefact is cached
  by (model checksum, quantization, OpenVINO version), so a sweep converts once.
- CPU/GPU run GenAI's dynamic ``LLMPipeline``. ``NPU`` runs its static pipeline, sized by
  ``max_seq_len`` (MIN_RESPONSE_LEN = max_new_tokens, MAX_PROMPT_LEN = max_seq_len - max_new_tokens; every
  pipeline's properties: ``harness.adapters.openvino.pipeline_properties``);
  ``NPU-emulated`` runs that same static pipeline through OpenVINO's NPU plugin emulated on CPU
  (NPUW_DEVICES=CPU): a test of the code path, never an NPU timing (records say ``emulated``).
- The gate reads full logits from the same IR, compiled for the point's device with the plugin
  properties the timed pipeline compiles with, stepped one token at a time; on the static pipeline,
  which returns chosen tokens only, it teacher-forces one 1-token generation per position there (top-1
  against the reference's top-k). ``gate_path`` records which.
- ``speculative`` runs GenAI's own draft-model and prompt-lookup pipelines on the dynamic devices
  (``harness.adapters.openvino.speculative``); ``generate_plain`` a second pipeline on the same IR without them.
- The text path (``text``): GenAI's own tokenizer, chat template and text-in, text-out ``generate``.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path
from typing import Optional, Sequence

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.adapters.openvino import compile_probe, ir_export, pipeline_properties, speculative, twin
from harness.adapters.openvino.description import Description
from harness.adapters.openvino.ir_export import NNCF_MODES
from harness.adapters.openvino.steps import EMULATED_NPU, IRSteps
from harness.adapters.openvino.steps import STATIC as _STATIC
from harness.adapters.openvino.text import GenAITextPath
from harness.adapters.trace import GenerationTrace, now_ns
from harness.errors import Unsupported


class TruncatedGeneration(RuntimeError):
    """The static pipeline stopped early because its KV cache was full (GenAI does not say so)."""


class OpenVINOAdapter(IRSteps, GenAITextPath, Description, Adapter):  # step-wise logits; own text path; describe
    name = "openvino"
    devices = ("CPU", "GPU", "NPU", EMULATED_NPU)
    quantizations = frozenset({"none", *NNCF_MODES})
    supports_beams = False  # GenAI streams no per-step callback under beam search: no per-token timing
    supports_max_seq_len = True
    supports_chunked_prefill = True  # dynamic pipelines: the scheduler's split-fuse token budget
    # Decided per point in load(): the dynamic pipelines step the IR for logits; the static pipeline
    # returns chosen tokens only, so it has forced top-1 and neither logits nor one-pass scoring.
    supports_logits = True
    supports_score = True
    supports_forced_top1 = True
    engine_modules = ("openvino", "openvino_genai", "openvino_tokenizers")

    def can_serve(self, loaded, point, settings: LoadSettings) -> bool:
        # Dynamic pipelines take any prompt per call; the NPU's static pipeline is compiled for its shapes.
        return point.device not in ("NPU", EMULATED_NPU) and self.differs_only_in(
            loaded, point, frozenset({"prompt_len"})
        )

    @classmethod
    def available(cls) -> tuple[bool, str]:
        missing = [
            m
            for m in ("openvino", "openvino_genai", "openvino_tokenizers", "optimum.intel", "nncf")
            if find_spec(m.split(".")[0]) is None
        ]
        if missing:
            return False, f"{', '.join(missing)} not installed: pip install 'harness[openvino]'"
        return True, "OpenVINO GenAI"

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        ok, why = cls.available()
        if not ok:
            return why
        import openvino as ov

        present = ov.Core().available_devices
        wanted = "CPU" if device == EMULATED_NPU else device
        if not any(d.split(".")[0] == wanted for d in present):
            return (
                f"OpenVINO {ov.__version__.split('-')[0]} lists no {device} (available_devices: {', '.join(present)})"
            )
        return None

    @classmethod
    def model_failure(cls, spec, cache_dir: Optional[Path] = None) -> Optional[str]:
        """optimum-intel's export builds the checkpoint through transformers (a given IR is not exported); the
        tokenizer's conversion, where the IR brings no tokenizer IRs, is asked of openvino_tokenizers itself."""
        from harness.adapters.openvino import tokenizer_check
        from harness.models import transformers_check

        unknown = None if spec.artefacts.openvino is not None else transformers_check.unknown_model_type(spec)
        if unknown is not None:
            config, what = unknown
            return f"{config}: IR export (optimum-intel): {what}; {transformers_check.advice(spec)}"
        return tokenizer_check.reason(spec, cache_dir)

    @classmethod
    def native_precision(cls, spec, device: str) -> Optional[str]:
        """At quantization ``none`` a dynamic pipeline computes in its device plugin's default inference
        precision (no hint is set, and the export ignores ``model.dtype``): ``bf16`` on a CPU with AVX512-BF16
        or AMX, ``f32`` on one without, ``f16`` on a GPU. None where the plugin cannot say here (OpenVINO
        missing, the device absent) and for the static pipelines, whose precision NPUW decides."""
        if device in _STATIC or not cls.available()[0]:
            return None
        return ir_export.inference_precision(device)

    @classmethod
    def capability_reason(cls, point) -> Optional[str]:
        static = point.device in _STATIC
        if static and point.beam_width > 1:
            return (
                f"OpenVINO GenAI's static {point.device} pipeline refuses beam search (beam_width={point.beam_width})"
            )
        if static and point.max_seq_len is None:
            return f"the static {point.device} pipeline needs max_seq_len (its KV cache size)"
        if static and point.speculative != "none":
            return f"OpenVINO GenAI's static {point.device} pipeline does not speculate ({point.speculative})"
        if not static and point.max_seq_len is not None:
            return f"the dynamic {point.device} pipeline has no fixed KV cache size (max_seq_len={point.max_seq_len})"
        return super().capability_reason(point)

    # --- the protocol ---------------------------------------------------------------------------

    def load(self, model, point, settings: LoadSettings) -> None:
        import openvino as ov
        import openvino_genai

        from harness.models.sources import cache_dir

        self.point, self.settings, self.source = point, settings, model
        static = point.device in _STATIC
        self.supports_logits = self.supports_score = not static
        self.supports_forced_top1 = static
        cache = cache_dir(settings.cache_dir)
        start = now_ns()
        self.compression = (
            ir_export.compression_options(point.quantization, settings.quantization)
            if point.quantization != "none"
            else {}
        )
        self.ir_dir = ir_export.artefact(model, point.quantization, self.compression, cache)
        self.convert_s = (now_ns() - start) / 1e9
        compile_cache = cache / "openvino" / "compiled"
        compile_cache.mkdir(parents=True, exist_ok=True)
        blobs_before = set(compile_cache.iterdir())
        properties = pipeline_properties.properties(openvino_genai, point, settings, compile_cache)
        config, device = properties.config, properties.device
        self.prefill_chunk = properties.prefill_chunk
        self.max_prompt, self.min_response = properties.max_prompt, properties.min_response
        # The plugin properties the pipeline compiles with: the gate's step-wise request compiles with them too.
        self.plugin_device, self.plugin_config = device, properties.plugin
        if compile_probe.at_risk(device, self.plugin_config, ir_export.inference_precision(device)):
            crash = compile_probe.crash_reason(self.ir_dir / "openvino_model.xml", device, self.plugin_config)
            if crash:
                raise PointSkipped(crash)
        from harness.adapters.openvino.text import tokenizer_dir

        # The IR directory's own tokenizer IRs, as a deployment loads them; converted here where it has none.
        converted, self.tokenizer_origin = tokenizer_dir(self.ir_dir, model, cache)
        given = (openvino_genai.Tokenizer(str(converted)),) if converted else ()
        spec = speculative.spec_of(point)
        draft_dir = speculative.draft_ir(self, spec, settings.draft, cache) if spec.kind == "draft" else None
        drafting = speculative.pipeline_options(openvino_genai, spec, draft_dir, device, self.plugin_config)
        start = now_ns()
        from harness.errors import step

        with step(self.ir_dir, f"compile (OpenVINO GenAI LLMPipeline on {device})"):
            self.pipeline = openvino_genai.LLMPipeline(str(self.ir_dir), *given, device, **config, **drafting)
        self.compile_s = (now_ns() - start) / 1e9
        self.spec = spec
        # the plain path beside a speculative one: the same IR and properties (compiled from the cache)
        self.plain = openvino_genai.LLMPipeline(str(self.ir_dir), *given, device, **config) if drafting else None
        if drafting:  # its own default config speculates too (the text path generates with it)
            defaults = self.pipeline.get_generation_config()
            # an unset EOS (-1) is refused when a config is set: take the tokenizer's, as generate does
            defaults.stop_token_ids = {token for token in defaults.stop_token_ids if token >= 0}
            if defaults.eos_token_id < 0 and (eos := self.pipeline.get_tokenizer().get_eos_token_id()) >= 0:
                defaults.set_eos_token_id(eos)  # also a stop id, as GenAI requires
            speculative.configure(defaults, spec)
            if defaults.eos_token_id >= 0:
                self.pipeline.set_generation_config(defaults)
        # A compile that wrote no new blob into CACHE_DIR was served from it.
        self.compile_state = (
            "uncached"
            if "CACHE_DIR" not in config
            else "cold"
            if set(compile_cache.iterdir()) - blobs_before
            else "warm"
        )
        self._ov, self._genai = ov, openvino_genai
        self._request = None
        dynamic_none = point.quantization == "none" and point.device not in _STATIC
        self.precision = ir_export.inference_precision(point.device) if dynamic_none else None  # as native_precision

    def generate_plain(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        return self.generate(prompts, max_new_tokens, plain=True)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, plain: bool = False) -> GenerationTrace:
        import numpy as np

        speculating = self.plain is not None and not plain
        pipeline = self.pipeline if speculating or self.plain is None else self.plain
        if len(prompts) != 1:
            raise ValueError("the openvino adapter runs batch size 1")
        genai = self._genai
        config = genai.GenerationConfig()
        config.max_new_tokens = config.min_new_tokens = max_new_tokens
        config.ignore_eos = True  # exactly max_new_tokens, as on every engine
        if speculating:
            speculative.configure(config, self.spec)
        times: list[int] = []
        bursts: list[int] = []

        class Clock(genai.StreamerBase):
            """Called by GenAI for each new token (a list of them, per step, where it speculates): one
            timestamp per call, nothing else."""

            def write(self, token):
                count = len(token) if isinstance(token, list) else 1
                times.extend([now_ns()] * count)
                bursts.append(count)
                return genai.StreamingStatus.RUNNING

            def end(self):
                pass

        input_ids = self._ov.Tensor(np.asarray([list(prompts[0])], dtype=np.int64))
        start = now_ns()
        result = pipeline.generate(input_ids, config, Clock())
        tokens = [list(map(int, seq)) for seq in result.tokens]
        metrics = result.perf_metrics
        if self.point.device in _STATIC and len(tokens[0]) < max_new_tokens:
            capacity = self.max_prompt + self.min_response - 1
            raise TruncatedGeneration(
                f"static pipeline stopped after {len(tokens[0])} of {max_new_tokens} tokens: its KV cache "
                f"(MAX_PROMPT_LEN {self.max_prompt} + MIN_RESPONSE_LEN {self.min_response} - 1 = {capacity}) "
                f"was full with a {len(prompts[0])}-token prompt"
            )
        return GenerationTrace(
            start_ns=start,
            token_ns=times,
            prompt_tokens=len(prompts[0]),
            output_ids=tokens,
            engine_metrics={"ttft_ms": float(metrics.get_ttft().mean), "tpot_ms": float(metrics.get_tpot().mean)},
            speculation=speculative.steps_of(bursts, result, self.spec) if speculating else None,
        )

    def generate_until_stop(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """The pipeline's greedy ``generate`` with its own stopping (its generation config's EOS and stop ids)."""
        import numpy as np

        if getattr(self, "max_prompt", None) is not None:  # a static pipeline: its sizes are fixed at compile
            capacity = self.max_prompt + self.min_response - 1
            if len(prompt_ids) > self.max_prompt or len(prompt_ids) + max_new_tokens > capacity:
                raise Unsupported(
                    f"a {len(prompt_ids)}-token prompt and {max_new_tokens} new tokens do not fit the static pipeline "
                    f"(MAX_PROMPT_LEN {self.max_prompt}, MIN_RESPONSE_LEN {self.min_response})"
                )

        config = self.pipeline.get_generation_config()
        config.max_new_tokens = max_new_tokens
        config.min_new_tokens = 0
        config.ignore_eos = False
        config.do_sample = False
        config.num_beams = 1
        input_ids = self._ov.Tensor(np.asarray([list(prompt_ids)], dtype=np.int64))
        return [int(t) for t in self.pipeline.generate(input_ids, config).tokens[0]]

    def trusted_twin(self):
        """This point's IR stepped on the CPU plugin at f32 (``twin``): what every device path of it,
        the static NPU pipeline's included, must agree with up to activation rounding."""
        return twin.twin(self.ir_dir, self.settings.threads, self.source, self.rounding())

    def weight_bytes(self) -> int:
        return (self.ir_dir / "openvino_model.bin").stat().st_size

    def load_figures(self) -> dict:
        key = "compile_s" if self.compile_state == "uncached" else f"compile_{self.compile_state}_s"
        return {"export_s": self.convert_s, key: self.compile_s}

    def close(self) -> None:
        self.pipeline = self.plain = None
        self._request = None
