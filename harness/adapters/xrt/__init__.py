"""``xrt``: AMD NPUs (XDNA, ``amdxdna`` driver) through a prepared NPU runner.

pyxrt ships with AMD's XRT (``/opt/xilinx/xrt/python``), not PyPI. The adapter does not compile
kernels itself: it drives a *runner* named by import path in the scenario
(``adapter_options: {xrt: {runner: "my_pkg.npu:Runner", prefill_len: 2048}}``) that implements:

- ``prepare(model_dir, max_seq_len, prefill_len, eos_token_id) -> dict``: load weights, compile or
  load kernels, allocate buffers; returns a description recorded with the point;
- ``reset()``: forget the sequence;
- ``prefill(tokens) -> logits``: pad to the fixed ``prefill_len`` (EOS padding), run, and return fp32
  logits of the last *real* position;
- ``decode(token) -> logits``: one token against the host-side KV cache;
- optional ``profile() -> {"write_ms", "run_ms", "read_ms"}``: the per-call split of recent calls.

Device ``npu`` needs the NPU, XRT and a runner naming it. Device ``cpu-reference`` runs the shipped
NumPy runner (``harness.adapters.xrt.npu_reference``) with the same dataflow: it tests the adapter, the padding
and the gate here, and its records say ``emulated`` — they are never NPU timings.
"""

from __future__ import annotations

import importlib
import json
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Optional, Sequence

from pydantic import Field, PositiveInt

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.adapters.engine_options import AdapterOptions
from harness.adapters.trace import GenerationTrace, greedy_trace, now_ns

SYSFS_ROOT = Path("/sys")  # tests point this at a fake tree
XRT_ROOT = Path("/opt/xilinx/xrt")
REFERENCE_RUNNER = "harness.adapters.xrt.npu_reference:NumpyLlamaRunner"
CPU_REFERENCE = "cpu-reference"


def amd_npus() -> list[dict]:
    """AMD NPUs the kernel exposes: ``/sys/class/accel/accel*`` bound to the ``amdxdna`` driver."""
    found = []
    for node in sorted((SYSFS_ROOT / "class" / "accel").glob("accel*")):
        driver = node / "device" / "driver"
        if driver.exists() and Path(os.path.realpath(driver)).name == "amdxdna":
            info = {"node": f"/dev/accel/{node.name}"}
            for name in ("fw_version", "vbnv", "device"):
                file = node / "device" / name
                if file.is_file():
                    info[name] = file.read_text(errors="replace").strip()
            found.append(info)
    return found


def xrt_version() -> Optional[str]:
    """XRT's version from its install tree, or None when XRT is not installed."""
    version_file = XRT_ROOT / "version.json"
    if version_file.is_file():
        try:
            return str(json.loads(version_file.read_text()).get("BUILD_VERSION"))
        except (json.JSONDecodeError, OSError):
            return "unknown"
    return None


def _pyxrt_importable() -> bool:
    return find_spec("pyxrt") is not None or (XRT_ROOT / "python").is_dir()


def load_runner(path: str):
    """Instantiate ``module:Class`` (a runner), with an error that says what is wrong with the path."""
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname:
        raise ValueError(f"adapter_options.xrt.runner: expected 'module:Class', got {path!r}")
    try:
        target = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"adapter_options.xrt.runner: cannot import {path!r}: {exc}") from None
    return target()


class XRTOptions(AdapterOptions):
    """``adapter_options: {xrt: {...}}``."""

    runner: Optional[str] = Field(None, description="the NPU runner, 'module:Class' (needed for device npu)")
    prefill_len: Optional[PositiveInt] = Field(
        None, description="the runner's fixed prefill length (default: max_seq_len - max_new_tokens)"
    )


class XRTAdapter(Adapter):
    name = "xrt"
    Options = XRTOptions
    devices = ("npu", CPU_REFERENCE)
    supports_max_seq_len = True
    supports_logits = True

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "XRT runner protocol (numpy reference always available)"

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        if device == CPU_REFERENCE:
            return None
        npus = amd_npus()
        if not npus:
            return "no AMD NPU: no /dev/accel/accel* bound to the amdxdna driver"
        if xrt_version() is None or not _pyxrt_importable():
            return f"AMD NPU present ({npus[0]['node']}) but XRT/pyxrt is not installed under {XRT_ROOT}"
        return None

    @classmethod
    def capability_reason(cls, point) -> Optional[str]:
        if point.max_seq_len is None:
            return "xrt runners have a fixed context: set max_seq_len"
        return super().capability_reason(point)

    def load(self, model, point, settings: LoadSettings) -> None:
        options = self.Options.of(settings.options)
        runner_path = options.runner
        if point.device == "npu" and not runner_path:
            raise PointSkipped(
                "no NPU runner named: set adapter_options.xrt.runner to 'module:Class' "
                "(the shipped NumPy runner is for device cpu-reference only)"
            )
        self.point = point
        self.runner_path = runner_path or REFERENCE_RUNNER
        self.prefill_len = options.prefill_len or point.max_seq_len - settings.max_new_tokens
        eos = model.eos_token_ids()
        self.runner = load_runner(self.runner_path)
        start = now_ns()
        try:
            self.prepared = self.runner.prepare(model.hf_dir, point.max_seq_len, self.prefill_len, eos[0] if eos else 0)
        except ValueError as exc:  # the runner cannot take this model or shape
            raise PointSkipped(f"{self.runner_path}: {exc}") from None
        self._prepare_s = (now_ns() - start) / 1e9

    def _profile(self) -> dict:
        profile = getattr(self.runner, "profile", None)
        return dict(profile()) if callable(profile) else {}

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        prompt = list(prompts[0])
        if len(prompt) > self.prefill_len:
            raise ValueError(f"prompt of {len(prompt)} tokens exceeds the fixed prefill length {self.prefill_len}")
        self.runner.reset()
        trace = greedy_trace(self.runner.prefill, self.runner.decode, prompt, max_new_tokens)
        trace.engine_metrics.update(
            {
                "prefill_real_tokens": len(prompt),
                "prefill_padded_tokens": self.prefill_len,
                "padding_waste": 1 - len(prompt) / self.prefill_len,
            }
        )
        trace.engine_metrics.update({f"call_{k}": v for k, v in self._profile().items()})
        return trace

    def prefill(self, tokens: Sequence[int]):
        import numpy as np

        self.runner.reset()
        return np.asarray(self.runner.prefill(list(tokens)), dtype=np.float32)

    def decode(self, token: int):
        import numpy as np

        return np.asarray(self.runner.decode(int(token)), dtype=np.float32)

    def load_figures(self) -> dict:
        return {"compile_s": self._prepare_s}

    def describe(self):
        from harness.adapters import drivers
        from harness.records.engine import EngineInfo

        return EngineInfo(
            name="xrt" if self.point.device == "npu" else "numpy (NPU dataflow reference)",
            version=xrt_version() if self.point.device == "npu" else __import__("numpy").__version__,
            device=self.point.device,
            emulated=self.point.device == CPU_REFERENCE,
            driver=drivers.kernel_module("amdxdna") if self.point.device == "npu" else None,
            extra={
                "runner": self.runner_path,
                "prepared": self.prepared,
                "prefill_len": self.prefill_len,
                "npus": amd_npus(),
                "xrt_version": xrt_version(),
            },
        )
