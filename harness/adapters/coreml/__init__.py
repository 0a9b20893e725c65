"""``coreml``: Apple Neural Engine / GPU / CPU through Core ML (coremltools).

An HF Llama-family decoder is rewritten as a static-shape stateful PyTorch model
(``adapters/coreml_static.py``: fixed context ``max_seq_len``, KV cache as two fp16 states, fixed
prefill chunk) and converted with coremltools into one ML program with two functions sharing the
states: ``prefill`` (a chunk of ``moe_chunk_size`` tokens, default 64) and ``infer`` (one token).
Devices map to compute units: ``ane`` -> CPU_AND_NE, ``gpu`` -> CPU_AND_GPU, ``cpu`` -> CPU_ONLY,
``all`` -> ALL. Prediction needs macOS 15+; elsewhere those points skip, and conversion is still
tested. Device ``torch-static`` runs the static PyTorch model itself on the CPU, so the rewrite that
feeds the converter is checked against HF with the gate (records say ``emulated``).
"""

from __future__ import annotations

import platform
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Optional, Sequence

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.adapters.trace import GenerationTrace, greedy_trace, now_ns

COMPUTE_UNITS = {"ane": "CPU_AND_NE", "gpu": "CPU_AND_GPU", "cpu": "CPU_ONLY", "all": "ALL"}
TORCH_STATIC = "torch-static"
DEFAULT_CHUNK = 64
MIN_MACOS = (15, 0)


def macos_version() -> Optional[tuple[int, ...]]:
    if sys.platform != "darwin":
        return None
    release = platform.mac_ver()[0]
    return tuple(int(part) for part in release.split(".") if part.isdigit()) if release else None


def convert(hf_dir: str | Path, max_seq_len: int, chunk: int, out: str | Path) -> Path:
    """Convert the checkpoint at ``hf_dir`` into ``out`` (an .mlpackage with ``prefill`` and ``infer``)."""
    import tempfile

    import coremltools as ct
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from harness.adapters.coreml.static import StaticLlama, causal_mask

    hf = AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32).eval()
    module = StaticLlama(hf, max_seq_len, cache_dtype=torch.float16).eval()
    cache_shape = tuple(module.k_cache.shape)
    states = [
        ct.StateType(wrapped_type=ct.TensorType(shape=cache_shape, dtype=np.float16), name=name)
        for name in ("k_cache", "v_cache")
    ]
    out = Path(out)
    with tempfile.TemporaryDirectory() as tmp:
        parts = {}
        for function, width in (("prefill", chunk), ("infer", 1)):
            positions = torch.arange(width, dtype=torch.int32)
            example = (torch.zeros(1, width, dtype=torch.int32), positions, causal_mask(positions, max_seq_len))
            with torch.no_grad():
                traced = torch.jit.trace(module, example)
            mlmodel = ct.convert(
                traced,
                inputs=[
                    ct.TensorType("input_ids", shape=(1, width), dtype=np.int32),
                    ct.TensorType("positions", shape=(width,), dtype=np.int32),
                    ct.TensorType("causal_mask", shape=(1, 1, width, max_seq_len), dtype=np.float16),
                ],
                outputs=[ct.TensorType("logits", dtype=np.float16)],
                states=states,
                minimum_deployment_target=ct.target.iOS18,
                compute_precision=ct.precision.FLOAT16,
                convert_to="mlprogram",
            )
            parts[function] = Path(tmp) / f"{function}.mlpackage"
            mlmodel.save(str(parts[function]))
        descriptor = ct.utils.MultiFunctionDescriptor()
        for function, path in parts.items():
            descriptor.add_function(str(path), src_function_name="main", target_function_name=function)
        descriptor.default_function_name = "infer"
        ct.utils.save_multifunction(descriptor, str(out))
    return out


class CoreMLRunner:
    """Drives the converted package with the StaticRunner's protocol (macOS only)."""

    def __init__(self, package: Path, compute_units: str, max_seq_len: int, chunk: int, pad_token_id: int = 0):
        import coremltools as ct

        units = getattr(ct.ComputeUnit, compute_units)
        self.prefill_model = ct.models.MLModel(str(package), compute_units=units, function_name="prefill")
        self.infer_model = ct.models.MLModel(str(package), compute_units=units, function_name="infer")
        self.max_seq_len, self.chunk, self.pad = max_seq_len, chunk, pad_token_id
        self.reset()

    def reset(self) -> None:
        self.state = self.prefill_model.make_state()  # shared by both functions
        self.position = 0

    def _call(self, model, tokens: list[int]):
        import numpy as np

        positions = np.arange(self.position, self.position + len(tokens), dtype=np.int32)
        mask = np.where(np.arange(self.max_seq_len)[None, :] <= positions[:, None], 0.0, -np.inf)
        out = model.predict(
            {
                "input_ids": np.asarray([tokens], dtype=np.int32),
                "positions": positions,
                "causal_mask": mask[None, None].astype(np.float16),
            },
            state=self.state,
        )
        return np.asarray(out["logits"], dtype=np.float32)[0]

    def prefill(self, tokens: list[int]):
        self.reset()
        last = None
        for start in range(0, len(tokens), self.chunk):
            part = tokens[start : start + self.chunk]
            logits = self._call(self.prefill_model, part + [self.pad] * (self.chunk - len(part)))
            self.position += len(part)
            last = logits[len(part) - 1]
        return last

    def decode(self, token: int):
        logits = self._call(self.infer_model, [int(token)])
        self.position += 1
        return logits[0]


class CoreMLAdapter(Adapter):
    name = "coreml"
    devices = ("ane", "gpu", "cpu", "all", TORCH_STATIC)
    supports_max_seq_len = True
    supports_chunked_prefill = True
    supports_logits = True

    @classmethod
    def available(cls) -> tuple[bool, str]:
        missing = [m for m in ("coremltools", "torch", "transformers") if find_spec(m) is None]
        if missing:
            return False, f"{', '.join(missing)} not installed: pip install 'harness[coreml]'"
        return True, "Core ML (coremltools)"

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        ok, why = cls.available()
        if not ok:
            return why
        if device == TORCH_STATIC:
            return None
        version = macos_version()
        if version is None:
            return (
                f"Core ML prediction runs on macOS {MIN_MACOS[0]}+ only (this is {platform.system()}); "
                "conversion is tested here, and device torch-static runs the converted model's PyTorch source"
            )
        if version < MIN_MACOS:
            return f"stateful Core ML models need macOS {MIN_MACOS[0]}+ (this is macOS {'.'.join(map(str, version))})"
        return None

    @classmethod
    def capability_reason(cls, point) -> Optional[str]:
        if point.max_seq_len is None:
            return "Core ML models here have a fixed context: set max_seq_len"
        return super().capability_reason(point)

    def load(self, model, point, settings: LoadSettings) -> None:
        import json

        from harness.io import safe_name
        from harness.models.cache_build import build_once
        from harness.models.sources import cache_dir

        family = json.loads((Path(model.hf_dir) / "config.json").read_text()).get("model_type")
        from harness.adapters.coreml.static import FAMILIES

        if family not in FAMILIES:
            raise PointSkipped(f"the static Core ML rewrite handles {', '.join(FAMILIES)}, not {family!r}")
        self.point, self.chunk = point, point.moe_chunk_size or DEFAULT_CHUNK
        eos = model.eos_token_ids()
        pad = eos[0] if eos else 0
        start = now_ns()
        if point.device == TORCH_STATIC:
            import torch
            from transformers import AutoModelForCausalLM

            from harness.adapters.coreml.static import StaticLlama, StaticRunner

            if settings.threads:
                torch.set_num_threads(settings.threads)
            hf = AutoModelForCausalLM.from_pretrained(str(model.hf_dir), dtype=torch.float32).eval()
            self.runner = StaticRunner(
                StaticLlama(hf, point.max_seq_len, cache_dtype=torch.float32).eval(), self.chunk, pad
            )
            self.package = None
        else:
            cache = Path(settings.cache_dir) if settings.cache_dir else cache_dir()
            target = (
                cache
                / "coreml"
                / f"{safe_name(model.name)}-{model.artefact_key}-seq{point.max_seq_len}-chunk{self.chunk}"
            )
            build_once(
                target,
                lambda out: convert(model.hf_dir, point.max_seq_len, self.chunk, out / "model.mlpackage"),
                "model.mlpackage",
            )
            self.package = target / "model.mlpackage"
            self.runner = CoreMLRunner(self.package, COMPUTE_UNITS[point.device], point.max_seq_len, self.chunk, pad)
        self._load_s = (now_ns() - start) / 1e9

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        prompt = list(prompts[0])
        padded = -(-len(prompt) // self.chunk) * self.chunk
        return greedy_trace(
            self.runner.prefill,
            self.runner.decode,
            prompt,
            max_new_tokens,
            {
                "prefill_real_tokens": len(prompt),
                "prefill_padded_tokens": padded,
                "padding_waste": 1 - len(prompt) / padded,
            },
        )

    def prefill(self, tokens: Sequence[int]):
        return self.runner.prefill(list(tokens))

    def decode(self, token: int):
        return self.runner.decode(int(token))

    def load_figures(self) -> dict:
        return {"compile_s": self._load_s}

    def describe(self):
        import coremltools

        from harness.adapters import drivers
        from harness.records.engine import EngineInfo

        static = self.point.device == TORCH_STATIC
        return EngineInfo(
            name="torch (static Core ML source)" if static else "coreml",
            version=coremltools.__version__,
            device=self.point.device,
            driver=None if static else drivers.macos(),
            emulated=static,
            precision="fp32 (PyTorch)" if static else "fp16",
            extra={
                "compute_units": None if static else COMPUTE_UNITS[self.point.device],
                "package": str(self.package) if self.package else None,
                "prefill_chunk": self.chunk,
                "max_seq_len": self.point.max_seq_len,
            },
        )
