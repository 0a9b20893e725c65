"""What the ``openvino`` adapter says about a loaded point: ``describe()`` (engine and OpenVINO versions, the
device, the pipeline and its compile cache, the weights' and the CPU plugin's precisions) for the record's
engine part, and ``gate_path()`` (the device path the gate read and how) for the gate's."""

from __future__ import annotations

from harness.adapters.openvino.ir_export import weight_types
from harness.adapters.openvino.steps import EMULATED_NPU
from harness.adapters.openvino.steps import STATIC as _STATIC


class Description:
    """``describe`` and ``gate_path`` for the adapter; reads ``self._ov``, ``self._genai``, ``self.point``, the
    plugin's properties, the IR directory and the load figures, set by ``load``."""

    def gate_path(self) -> dict:
        static = self.point.device in _STATIC
        shown = {k: v for k, v in self.plugin_config.items() if k != "CACHE_DIR"}
        if static:
            note = "GenAI's static pipeline exposes chosen tokens only: the gate forces one token per position there"
        else:
            note = (
                "step-wise logits from the IR compiled for this device with the pipeline's plugin properties; "
                "GenAI's scheduler (paged KV cache"
                + (f", split-fuse prefill of {self.prefill_chunk}" if self.prefill_chunk else "")
                + ") exposes no logits and is not stepped"
            )
        return {
            "device": self.point.device,
            "config": {k: str(v) for k, v in shown.items()},
            "cache": f"static({self.point.max_seq_len})" if static else "stateful IR",
            "prefill_chunk": None if static else self.prefill_chunk,
            "notes": [note],
        }

    def describe(self):
        from harness.adapters import drivers
        from harness.records.engine import EngineInfo

        ov = self._ov
        core = ov.Core()
        hints = {}
        for key in ("INFERENCE_PRECISION_HINT", "KV_CACHE_PRECISION", "PERFORMANCE_HINT"):
            try:
                hints[key] = str(core.get_property("CPU", key))
            except Exception:  # noqa: BLE001 - a property this plugin version lacks is simply absent
                pass
        return EngineInfo(
            name="openvino-genai",
            version=self._genai.__version__,
            device=self.point.device,
            emulated=self.point.device == EMULATED_NPU,
            device_name=_device_name(core, self.point.device),
            driver=drivers.openvino_plugin(core, "CPU" if self.point.device == EMULATED_NPU else self.point.device),
            # what the point id says it ran at (quantization none): the plugin's inference precision
            precision=self.precision or None,
            extra={
                "openvino_version": ov.__version__,
                "pipeline": "static" if self.point.device in _STATIC else "dynamic",
                "prefix_caching": False,  # every round pays its prefill
                "prefill_chunk": getattr(self, "prefill_chunk", None),
                "quantization": self.point.quantization,
                "compression": self.compression,
                "weights_precision": dict(weight_types(self.ir_dir / "openvino_model.xml")),
                "precision_hints": hints,
                "compile_s": self.compile_s,
                "compile_cache": self.compile_state,
                "convert_s": self.convert_s,
                "tokenizer_converted": self.tokenizer_origin,  # GenAI's tokenizer: converted from the checkpoint's
                "artefact": given.record() if (given := self.source.given_for("openvino")) else None,
                **(
                    {"max_prompt_len": self.max_prompt, "min_response_len": self.min_response}
                    if self.point.device in _STATIC
                    else {}
                ),
            },
        )


def _device_name(core, device: str) -> str:
    try:
        return str(core.get_property("CPU" if device == EMULATED_NPU else device, "FULL_DEVICE_NAME"))
    except Exception:  # noqa: BLE001
        return device
