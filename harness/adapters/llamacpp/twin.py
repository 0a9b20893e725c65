"""The ``llamacpp`` adapter's trusted twin: the point's own GGUF on llama.cpp's plain CPU backend (no
GPU offload, no extra buffer types: no AMX or repacked weights), stepped one token at a time, the path
the same-weights reference is computed with (``harness.correctness.same_weights``).

The identical-weights noise floor is the same twin with the prompt evaluated one token per batch
(``n_batch`` 1) against the whole-prompt batch: llama.cpp then takes its matrix-vector kernels instead
of its matrix-matrix ones, a difference of rounding that should not matter. Where the two agree to the
last bit the floor is the harness's minimum.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from harness.adapters.trusted_twin import Twin
from harness.io import file_sha256

BATCH = {"reference": 512, "floor": 1}


class LlamaSteps:
    """Step-wise fp32 logits from ``self.llm`` (a ``llama_cpp.Llama``): the adapter's own and its twin's."""

    def _logits(self):
        import numpy as np

        # Without logits_all, llama-cpp-python keeps no scores; the context holds the last position's row.
        row = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),))
        return np.array(row, dtype=np.float32)

    def prefill(self, tokens: Sequence[int]):
        self.llm.reset()
        self.llm.eval(list(tokens))
        return self._logits()

    def decode(self, token: int):
        self.llm.eval([int(token)])
        return self._logits()


class GGUFSteps(LlamaSteps):
    """Step-wise fp32 logits of a GGUF on llama.cpp's CPU backend."""

    def __init__(self, path: Path, n_ctx: int, batch: int, threads: Optional[int], plain_params: Callable):
        import llama_cpp

        with plain_params():
            self.llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=batch,
                n_ubatch=batch,
                n_threads=threads,
                n_threads_batch=threads,
                n_gpu_layers=0,
                seed=0,
                verbose=False,
            )


def twin(path: Path, n_ctx: int, threads: Optional[int], plain_params: Callable) -> Twin:
    """The trusted twin of the GGUF at ``path`` (nothing is loaded until ``open``); ``plain_params()``:
    the adapter's context manager that loads a model without extra buffer types."""
    import llama_cpp

    from harness.adapters.llamacpp import gguf_export, rounding
    from harness.models import gguf_weights

    @contextmanager
    def open_steps(variant: str) -> Iterator[GGUFSteps]:
        steps = GGUFSteps(path, n_ctx, BATCH[variant], threads, plain_params)
        try:
            yield steps
        finally:
            steps.llm.close()

    # The content, not the name: a GGUF patched in place (same name, same size) gets its own reference.
    key = f"gguf-sha256:{file_sha256(path)}/cpu"
    return Twin(
        engine="llama.cpp CPU backend, no extra buffer types, step-wise",
        weights=str(path),
        key=key,
        floor_method="teacher-forced KL(twin, prompt in one batch || twin, prompt one token per batch)",
        versions={"llama_cpp_python": llama_cpp.__version__},
        open=open_steps,
        read_weights=lambda names, config: gguf_weights.read(path, names, config),
        rounding=rounding.model_of(set(gguf_export.tensor_types(path))),
    )
