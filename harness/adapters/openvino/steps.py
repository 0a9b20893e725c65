"""What the ``openvino`` adapter's gate reads: step-wise logits from the point's IR, compiled for the point's
device with the plugin properties the timed pipeline compiles with, one infer request per step; on the
static pipeline, which returns chosen tokens only, one 1-token generation per teacher-forced position."""

from __future__ import annotations

from typing import Sequence

from harness.adapters.openvino import twin
from harness.errors import Unsupported

STATIC = ("NPU", "NPU-emulated")  # devices on GenAI's static pipeline: chosen tokens only, no logits
EMULATED_NPU = STATIC[1]  # the static pipeline through the NPU plugin emulated on CPU (NPUW_DEVICES=CPU)


class IRSteps:
    """prefill/decode/score and forced top-1 for the adapter; reads ``self._ov``, ``self.ir_dir``, ``self.point`` and the
    plugin's device and properties, set by ``load``."""

    def _step_request(self):
        if self._request is None:
            core = self._ov.Core()
            compiled = core.compile_model(
                str(self.ir_dir / "openvino_model.xml"), self.plugin_device, dict(self.plugin_config)
            )
            self._request = compiled.create_infer_request()
            self._inputs = {i.get_any_name() for i in compiled.inputs}
        return self._request

    def rounding(self):
        """The rounding model of what the gate's requests ran (``openvino.rounding``), read from the compiled
        model's properties and the kernels it chose, and whether dynamic quantization ran, measured on the
        IR compiled with the same properties; a string where there is none."""
        from dataclasses import replace

        from harness.adapters.openvino import rounding

        if self.point.device != "CPU":
            return rounding.model_of(self.point.device, None)
        self.prefill([0])  # the plugin picks its kernels on the first inference
        settings = rounding.read(self._request.get_compiled_model())
        if settings.dynamic_group:
            measured = rounding.quantizes_inputs(self.ir_dir / "openvino_model.xml", self.plugin_config)
            settings = replace(settings, quantized_inputs=measured)
        return rounding.model_of(self.point.device, settings)

    def _infer(self, ids: Sequence[int]):
        import numpy as np

        request = self._step_request()
        request.infer(twin.feed(self._inputs, ids, self._position))
        self._position += len(ids)
        return np.array(request.get_tensor("logits").data[0, -1], dtype=np.float32)

    def score(self, tokens: Sequence[int], last: int):
        import numpy as np

        if self.point.device in STATIC:
            raise Unsupported("GenAI's static NPU pipeline returns chosen tokens only, no logits")
        self._step_request().reset_state()
        self._position = 0
        self._infer(tokens)
        return np.array(self._request.get_tensor("logits").data[0, -last:], dtype=np.float32)

    def prefill(self, tokens: Sequence[int]):
        if self.point.device in STATIC:
            raise Unsupported("GenAI's static NPU pipeline returns chosen tokens only, no logits")
        self._step_request().reset_state()
        self._position = 0
        return self._infer(tokens)

    def decode(self, token: int):
        if self._request is None:
            raise RuntimeError("decode() before prefill()")
        return self._infer([token])

    def teacher_forced_top1(self, prompt_ids: Sequence[int], tokens: Sequence[int]) -> list[int]:
        """The static pipeline's greedy choice after each reference prefix: one 1-token generation each."""
        import numpy as np

        if self.point.device not in STATIC:
            raise Unsupported("the dynamic pipelines expose logits; forced top-1 is the static pipeline's gate")
        if len(prompt_ids) + len(tokens) - 1 > self.max_prompt:
            raise Unsupported(
                f"teacher forcing needs prompts of up to {len(prompt_ids) + len(tokens) - 1} tokens; "
                f"this pipeline's MAX_PROMPT_LEN is {self.max_prompt} (raise max_seq_len)"
            )
        config = self._genai.GenerationConfig()
        config.max_new_tokens = 1
        chosen = []
        for i in range(len(tokens)):
            prefix = np.asarray([list(prompt_ids) + list(tokens[:i])], dtype=np.int64)
            chosen.append(int(self.pipeline.generate(self._ov.Tensor(prefix), config).tokens[0][0]))
        return chosen
