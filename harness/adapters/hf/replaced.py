"""HF transformers running an artefact's own weights: the model's class and config, with the tensors a
reader gives back (a GGUF's or an OpenVINO IR's, dequantized to fp32 under the HF names) in place of the
checkpoint's. The engine for the OpenVINO twin's floor and for the dequantized-model comparison
(``harness.correctness.dequantized_model``)."""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from harness.adapters.trusted_twin import ActivationRounding


@contextmanager
def with_weights(
    model,
    read_weights: Callable[[dict, dict], dict],
    dtype: str,
    threads: Optional[int],
    label: str,
    rounding: Optional[ActivationRounding] = None,
):
    """The ``hf`` adapter loaded in ``dtype`` with ``read_weights({hf name: shape}, hf config)`` (a
    ``Twin.read_weights``) loaded over the checkpoint's weights; names it does not return keep the
    checkpoint's values (an IR keeps unquantized tensors as they are). With ``rounding``, it rounds its
    activations as that engine does (``harness.adapters.hf.rounded``). Step-wise like any adapter;
    closed on exit."""
    import torch

    from harness.adapters import registry
    from harness.adapters.base import LoadSettings
    from harness.models.stored_weights import hf_config
    from harness.scenario.sweep import Point

    engine = registry.get("hf")()
    engine.load(
        model, Point(adapter="hf", device="cpu", id=f"{label}-{dtype}"), LoadSettings(dtype=dtype, threads=threads)
    )
    try:
        shapes = {name: tuple(p.shape) for name, p in engine.model.state_dict().items()}
        stored = read_weights(shapes, hf_config(model.hf_dir))
        with warnings.catch_warnings():  # read-only (memory-mapped) arrays: load_state_dict copies, never writes them
            warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
            engine.model.load_state_dict({n: torch.from_numpy(t.values) for n, t in stored.items()}, strict=False)
        if rounding is not None:
            from harness.adapters.hf.rounded import install

            install(engine.model, stored, rounding)
        yield engine
    finally:
        engine.close()
