"""A complete third-party adapter in one file: Llama-family checkpoints run in plain NumPy.

Install this directory (``pip install -e examples/numpy_adapter``) and the harness finds the
adapter through the ``harness.adapters`` entry point in its pyproject.toml: ``harness devices``
lists ``numpy:cpu`` and scenarios can use ``adapter: [numpy]``. It imports only ``harness.sdk``,
the harness's public adapter API.
"""

from __future__ import annotations

from typing import Optional, Sequence

from harness.sdk import Adapter, AdapterOptions, EngineInfo, GenerationTrace, LoadSettings, greedy_trace


class NumpyOptions(AdapterOptions):
    """``adapter_options: {numpy: {context: 1024}}``; any other key is refused by ``harness check``."""

    context: int = 512  # KV cache positions when the point sets no max_seq_len


class NumpyAdapter(Adapter):
    name = "numpy"  # must equal the entry point's name
    Options = NumpyOptions  # the scenario's adapter_options.numpy, validated before any point runs
    devices = ("cpu",)
    supports_max_seq_len = True  # the KV cache is allocated for max_seq_len positions
    supports_logits = True  # prefill()/decode() return fp32 logits: the correctness gate runs on them

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "NumPy"  # cheap: no engine import here

    @classmethod
    def device_reason(cls, device: str) -> Optional[str]:
        return None  # the CPU is always there

    def load(self, model, point, settings: LoadSettings) -> None:
        import numpy  # the "engine" is imported here, never at module import

        from harness.sdk import NumpyLlamaRunner  # a NumPy Llama forward pass shipped with the SDK

        self.numpy_version = numpy.__version__
        self.runner = NumpyLlamaRunner()
        context = point.max_seq_len or self.Options.of(settings.options).context
        # no padding: a fixed "prefill" as long as the context, run on the real tokens only
        self.runner.prepare(model.hf_dir, context, context, eos_token_id=0)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> GenerationTrace:
        # Timestamps right before the engine starts and as each token reaches the host; exactly
        # max_new_tokens greedy steps (EOS does not stop a timed pass). Engines with their own
        # generate loop build the GenerationTrace themselves the same way.
        return greedy_trace(self.prefill, self.decode, prompts[0], max_new_tokens)

    def prefill(self, tokens: Sequence[int]):
        return self.runner.prefill(list(tokens))  # fp32 logits of the last position: the gate uses these

    def decode(self, token: int):
        return self.runner.decode(int(token))

    def describe(self) -> EngineInfo:
        return EngineInfo(name="numpy", version=self.numpy_version, device="cpu")
