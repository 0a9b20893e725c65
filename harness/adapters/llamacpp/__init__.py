"""``llamacpp``: llama.cpp through llama-cpp-python, on GGUF models.

- The model's own GGUF runs as quantization ``none``; its file type names the point's precision
  (``llamacpp-cpu-q4_k_m`` for the default model, ``-f16`` for a converted checkpoint: ``native_precision``)
  and its tensor types are recorded as the point's ``quantization_detail``. Other levels come from llama.cpp's quantizer (int8_sym -> Q8_0,
  int4_sym -> Q4_0, int4_asym -> Q4_1) and need a full-precision source: a checkpoint without a GGUF
  (an HF directory) is converted to an F16 GGUF first by llama.cpp's own ``convert_hf_to_gguf.py`` of the
  installed version (``converter``; the record's ``converter`` names it); an already quantized GGUF is not
  quantized again (those points skip, saying so).
- ``max_seq_len`` is the context (KV cache) size, ``moe_chunk_size`` the prefill batch
  (``n_batch``/``n_ubatch``), ``threads`` both thread counts; ``gpu`` offloads every layer when the
  build has a GPU backend.
- llama.cpp's extra CPU buffer types (AMX and weight repacking) are off where the CPU has AMX:
  llama-cpp-python 0.3.36 segfaults in its first ``eval`` there (seen on a Xeon with amx_int8, on
  the default model and on every quantized tiny model). ``adapter_options: {llamacpp:
  {extra_buffer_types: true|false}}`` overrides; the record says which was used and why.
- The chat API's template is llama-cpp-python's choice for the GGUF (its own ``tokenizer.chat_template``, or
  ``llama-2`` where it carries none); ``adapter_options: {llamacpp: {chat_template: checkpoint}}`` gives it
  the checkpoint's template (another value names a llama-cpp-python format), as a deployment would.
- ``speculative`` runs llama-cpp-python's own ``Llama(draft_model=...)`` through its greedy ``generate``
  (``harness.adapters.llamacpp.speculative``); ``generate_plain`` the same API without the draft.
- Timed passes are plain greedy generation (eval + argmax) with a per-token clock; llama.cpp's own counters
  (prompt-eval and eval time) are recorded beside ours as ``engine_*``. The gate reads the last
  position's logits after each ``eval``; it never runs inside a timed pass.
"""

from __future__ import annotations

from dataclasses import asdict
from importlib.util import find_spec
from pathlib import Path
from typing import Optional, Sequence

from pydantic import Field

from harness.adapters.base import Adapter, LoadSettings
from harness.adapters.engine_options import AdapterOptions
from harness.adapters.llamacpp import speculative
from harness.adapters.llamacpp.buffers import extra_buffer_types, model_params
from harness.adapters.llamacpp.gguf_files import FTYPES, GgufFiles
from harness.adapters.llamacpp.text_api import LlamaTextApi
from harness.adapters.llamacpp.twin import LlamaSteps
from harness.adapters.trace import GenerationTrace, now_ns

DEFAULT_CONTEXT = 4096  # when the point sets no max_seq_len


class LlamaCppOptions(AdapterOptions):
    """``adapter_options: {llamacpp: {...}}``."""

    chat_template: Optional[str] = Field(
        None, description="the chat API's template: checkpoint (the checkpoint's own) or a llama-cpp-python format"
    )
    extra_buffer_types: Optional[bool] = Field(
        None, description="llama.cpp's extra CPU buffer types (AMX, weight repacking); default: off on AMX CPUs"
    )


class LlamaCppAdapter(GgufFiles, LlamaTextApi, LlamaSteps, Adapter):  # prefill/decode: LlamaSteps, shared with the twin
    name = "llamacpp"
    Options = LlamaCppOptions
    devices = ("cpu", "gpu")
    quantizations = frozenset({"none", *FTYPES})
    supports_max_seq_len = True
    supports_chunked_prefill = True
    supports_logits = True
    engine_modules = ("llama_cpp",)

    def can_serve(self, loaded, point, settings: LoadSettings) -> bool:
        # The KV cache is sized at load: reuse only when a fresh load would size it the same.
        return self.differs_only_in(loaded, point, frozenset({"prompt_len"})) and self._context(
            loaded, settings
        ) == self._context(point, settings)

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if find_spec("llama_cpp") is None:
            return False, "llama-cpp-python not installed: pip install 'harness[llamacpp]' (builds llama.cpp, ~6 min)"
        return True, "llama.cpp (llama-cpp-python)"

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        ok, why = cls.available()
        if not ok or device == "cpu":
            return None if ok else why
        import llama_cpp  # loads the shared library only

        if not llama_cpp.llama_supports_gpu_offload():
            return "this llama-cpp-python build has no GPU backend (rebuild with CMAKE_ARGS=-DGGML_CUDA=on or similar)"
        return None

    @classmethod
    def model_reason(cls, spec, cache_dir: Optional[Path] = None) -> Optional[str]:
        from harness.adapters.llamacpp import preflight  # the converter's own architecture lookup

        return preflight.reason(spec, cache_dir)

    @classmethod
    def native_precision(cls, spec, device: str) -> Optional[str]:
        """The model's own GGUF file type (``q4_k_m`` for the default model), on every device; a checkpoint
        without a GGUF is converted to F16 (``_source_gguf``). None when the GGUF cannot be read here (gguf-py
        missing)."""
        from harness.models.sources import gguf_of

        path = gguf_of(spec)
        if path is None:
            return "f16"
        try:
            from harness.adapters.llamacpp import gguf_export

            return gguf_export.precision(path)
        except ImportError:
            return None

    @staticmethod
    def _context(point, settings: LoadSettings) -> int:
        """KV cache size: max_seq_len when the point fixes it, else room for a synthetic prompt and its
        output (llama_decode fails with code 1 when the cache has no slot left)."""
        if point.max_seq_len:
            return point.max_seq_len
        return max(DEFAULT_CONTEXT, (point.prompt_len or 0) + (settings.max_new_tokens or 0))

    # model files (source GGUF, quantized, draft): GgufFiles (harness.adapters.llamacpp.gguf_files)

    # --- lifecycle ------------------------------------------------------------------------------

    def load(self, model, point, settings: LoadSettings) -> None:
        import llama_cpp

        from harness.models.sources import cache_dir

        self._figures: dict = {}
        options = self.Options.of(settings.options)
        cache = Path(settings.cache_dir) if settings.cache_dir else cache_dir()
        path = self._source_gguf(model, cache)
        from harness.adapters.llamacpp.converter import Conversion

        given = model.given_for(self.name)
        conversion = Conversion.read(path) if model.gguf_path is None and given is None else None
        self._conversion = asdict(conversion) if conversion else None
        self._artefact = given.record() if given else None
        if point.quantization != "none":
            path = self._quantized(path, point.quantization, settings.threads, cache)
        self.path, self.point = path, point
        spec = speculative.spec_of(point)
        draft_path = self._draft_path(settings.draft, spec, settings.threads, cache) if spec.kind == "draft" else None
        batch = point.moe_chunk_size or 512
        from harness.records.environment import cpu_flags

        self.extra_buffer_types = extra_buffer_types(options.extra_buffer_types, cpu_flags())
        start = now_ns()
        from harness.errors import step

        with model_params(self.extra_buffer_types[0]), step(path, "llama.cpp model load"):
            self.llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self._context(point, settings),
                n_batch=batch,
                n_ubatch=batch,
                n_threads=settings.threads,
                n_threads_batch=settings.threads,
                n_gpu_layers=-1 if point.device == "gpu" else 0,
                seed=0,
                verbose=False,
                logits_all=spec.enabled,  # rows for every position, which verify steps read (off outside them)
            )
        self.llm._logits_all = False
        self.draft = None
        if spec.enabled:
            params = lambda: model_params(self.extra_buffer_types[0])  # noqa: E731
            self.draft = speculative.draft_for(spec, draft_path, self.llm.n_ctx(), settings.threads, params)
        self._figures["model_load_s"] = (now_ns() - start) / 1e9
        self._chat_source = None
        if options.chat_template:  # the chat path a deployment would configure
            from harness.adapters.llamacpp import chat
            from harness.models.prompts import chat_template

            template = chat_template(model.hf_dir)
            self._chat_source = chat.configure(self.llm, options.chat_template, template)
        self._perf = (llama_cpp.llama_perf_context, llama_cpp.llama_perf_context_reset)

    def generate_plain(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        """llama-cpp-python's greedy ``generate`` without the draft: the speculative point's own baseline."""
        return speculative.generate(self.llm, None, prompts[0], max_new_tokens)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        import numpy as np

        if self.draft is not None:
            return speculative.generate(self.llm, self.draft, prompts[0], max_new_tokens)
        perf, reset_perf = self._perf
        llm = self.llm
        llm.reset()  # no prefix reuse between rounds: every round pays its prefill
        reset_perf(llm.ctx)
        vocab = (llm.n_vocab(),)
        # Greedy by argmax over the context's logits: llama-cpp-python's sampler chain costs ~4 % of a
        # Gemma decode step in Python overhead, argmax ~1 % (benchmarks/llamacpp_timing.py).
        times, tokens = [], []
        start = now_ns()
        llm.eval(list(prompts[0]))
        while True:
            token = int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=vocab)))
            times.append(now_ns())
            tokens.append(token)
            if len(tokens) == max_new_tokens:
                break  # EOS does not stop a timed pass: exactly max_new_tokens steps
            llm.eval([token])
        counters = perf(llm.ctx)
        engine = {"prompt_eval_ms": counters.t_p_eval_ms}
        if counters.n_eval:
            engine["tpot_ms"] = counters.t_eval_ms / counters.n_eval
        return GenerationTrace(start, times, len(prompts[0]), 1, [tokens], engine_metrics=engine)

    def generate_until_stop(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """Greedy, ending at a token llama.cpp's vocabulary marks end of generation (``llama_vocab_is_eog``, as
        ``create_completion`` stops), at most ``max_new_tokens``."""
        import llama_cpp
        import numpy as np

        llm = self.llm
        llm.reset()
        vocab = (llm.n_vocab(),)
        tokens: list[int] = []
        llm.eval(list(prompt_ids))
        while len(tokens) < max_new_tokens:
            token = int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=vocab)))
            tokens.append(token)
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token) or len(tokens) == max_new_tokens:
                break
            llm.eval([token])
        return tokens

    # the engine's own text path (tokenize, chat_prompt, ...): LlamaTextApi (harness.adapters.llamacpp.text_api)

    def runs_quantized(self, point) -> bool:
        from harness.adapters.llamacpp import gguf_export

        return not gguf_export.is_full_precision(self.path)  # e.g. the default model's own Q4_K_M

    def trusted_twin(self):
        """This point's GGUF on the plain CPU backend (``twin``): what its GPU offload and its CPU
        kernels with extra buffer types must agree with up to rounding."""
        from harness.adapters.llamacpp import twin

        return twin.twin(
            self.path, self.llm.n_ctx(), self.llm.context_params.n_threads or None, lambda: model_params(False)
        )

    def weight_bytes(self) -> int:
        return self.path.stat().st_size  # tensor data dominates a GGUF file

    def load_figures(self) -> dict:
        return dict(self._figures)

    def describe(self):
        import llama_cpp

        from harness.adapters import drivers
        from harness.adapters.llamacpp import gguf_export
        from harness.records.engine import EngineInfo

        return EngineInfo(
            name="llama.cpp",
            version=llama_cpp.__version__,
            device=self.point.device,
            driver=drivers.nvidia() if self.point.device == "gpu" else None,
            precision=gguf_export.precision(self.path),  # what the point id and the report say it ran at
            threads=self.llm.context_params.n_threads,
            extra={
                "gguf": str(self.path),
                "converter": self._conversion,  # what made the GGUF from the checkpoint; None for a GGUF source
                "artefact": self._artefact,  # the scenario's own GGUF (model.artefacts.llamacpp): path, sha256
                "file_type": gguf_export.file_type(self.path),
                "quantization_detail": gguf_export.tensor_types(self.path),
                "n_ctx": self.llm.n_ctx(),
                "n_batch": self.llm.n_batch,
                "gpu_offload": self.point.device == "gpu",
                "extra_buffer_types": self.extra_buffer_types[0],
                "extra_buffer_types_why": self.extra_buffer_types[1],
                "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
            },
        )

    def close(self) -> None:
        draft = getattr(getattr(self, "draft", None), "inner", None)
        if getattr(draft, "llm", None) is not None:  # a ModelDraft's own context
            draft.llm.close()
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
            self.llm = None
