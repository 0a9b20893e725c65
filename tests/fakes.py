"""Adapters registered only in tests: deterministic, engine-free, and able to misbehave on purpose."""

from __future__ import annotations

import time

import numpy as np

from harness.adapters.base import Adapter
from harness.adapters.engine_options import AdapterOptions
from harness.adapters.trace import GenerationTrace, now_ns
from harness.records.engine import EngineInfo


class FakeOptions(AdapterOptions):
    token_period: int = 7  # the fake engine emits token ``i % token_period`` at step i


class FakeAdapter(Adapter):
    """Emits token ``i % token_period`` at step i (``adapter_options: {fake: {token_period: 7}}``); ``fail_at``
    raises mid-generation, ``truncate_to`` stops early."""

    name = "fake"
    Options = FakeOptions
    devices = ("cpu", "npu")
    supports_batch = True
    supports_max_seq_len = True
    fail_at: int | None = None
    truncate_to: int | None = None
    point, period = None, FakeOptions().token_period  # until load sets them

    @classmethod
    def available(cls):
        return True, "fake engine"

    @classmethod
    def device_reason(cls, device):
        return None if device == "cpu" else "no fake NPU on this machine"

    def load(self, model, point, settings):
        self.point, self.period = point, self.Options.of(settings.options).token_period

    def generate(self, prompts, max_new_tokens):
        start = now_ns()
        times = []
        for step in range(self.truncate_to or max_new_tokens):
            if self.fail_at is not None and step == self.fail_at:
                raise RuntimeError(f"fake engine fault at step {step}")
            time.sleep(0.002)  # a step takes time, as on any engine (energy windows need some)
            times.append(now_ns())
        return GenerationTrace(
            start, times, len(prompts[0]), len(prompts), [[i % self.period for i in range(len(times))] for _ in prompts]
        )

    def prefill(self, tokens):
        return np.zeros(8, dtype=np.float32)

    def decode(self, token):
        return np.zeros(8, dtype=np.float32)

    def describe(self):
        return EngineInfo(
            name="fake", version="0", device=getattr(self.point, "device", None), extra={"token_period": self.period}
        )


class FailingAdapter(FakeAdapter):
    name = "fake-failing"
    fail_at = 3


class TruncatingAdapter(FakeAdapter):
    name = "fake-truncating"
    truncate_to = 2


class SegfaultAdapter(FakeAdapter):
    name = "fake-segfault"

    def generate(self, prompts, max_new_tokens):
        import ctypes

        ctypes.string_at(0)  # reads address 0: SIGSEGV, as a broken native engine would


class HangingAdapter(FakeAdapter):
    name = "fake-hang"

    def generate(self, prompts, max_new_tokens):
        import time

        time.sleep(3600)


class HungryAdapter(FakeAdapter):
    name = "fake-hungry"

    def generate(self, prompts, max_new_tokens):
        hoard = []
        while True:
            hoard.append(bytearray(64 * 2**20))


ALL = (FakeAdapter, FailingAdapter, TruncatingAdapter, SegfaultAdapter, HangingAdapter, HungryAdapter)


class NanMetricsAdapter(FakeAdapter):
    """Healthy timings, but the engine's own figures are NaN and infinity (as a broken counter gives)."""

    name = "fake-nan-metrics"

    def generate(self, prompts, max_new_tokens):
        trace = super().generate(prompts, max_new_tokens)
        trace.engine_metrics = {"throughput": float("nan"), "ttft_ms": float("inf")}
        return trace


class NanClockAdapter(FakeAdapter):
    """Timestamps that are not numbers: every timing figure comes out NaN."""

    name = "fake-nan-clock"

    def generate(self, prompts, max_new_tokens):
        trace = super().generate(prompts, max_new_tokens)
        trace.token_ns = [float("nan")] * len(trace.token_ns)
        return trace


class NegativeMetricsAdapter(FakeAdapter):
    """Healthy timings, but the engine's own TTFT is negative (a counter that wrapped): finite, impossible."""

    name = "fake-negative-metrics"

    def generate(self, prompts, max_new_tokens):
        trace = super().generate(prompts, max_new_tokens)
        trace.engine_metrics = {"ttft_ms": -3.0}
        return trace


NONFINITE = (NanMetricsAdapter, NanClockAdapter)


class PickyAdapter(FakeAdapter):
    """Healthy except at three batch sizes: 7 segfaults, 13 hangs, 21 eats memory (a 30-point sweep's faults)."""

    name = "fake-picky"

    def generate(self, prompts, max_new_tokens):
        if self.point.batch_size == 7:
            SegfaultAdapter.generate(self, prompts, max_new_tokens)
        if self.point.batch_size == 13:
            HangingAdapter.generate(self, prompts, max_new_tokens)
        if self.point.batch_size == 21:
            HungryAdapter.generate(self, prompts, max_new_tokens)
        return super().generate(prompts, max_new_tokens)


class ReusableAdapter(FakeAdapter):
    """A loaded engine that serves any prompt length; ``describe`` says which load (in which process) ran a
    point, and how many generate calls that load had served before the point's first one."""

    name = "fake-reusable"
    loads = 0

    def load(self, model, point, settings):
        import os

        super().load(model, point, settings)
        ReusableAdapter.loads += 1
        self.load_id, self.calls = f"{os.getpid()}:{ReusableAdapter.loads}", 0

    def can_serve(self, loaded, point, settings):
        return self.differs_only_in(loaded, point, frozenset({"prompt_len"}))

    def generate(self, prompts, max_new_tokens):
        self.calls += 1
        return super().generate(prompts, max_new_tokens)

    def describe(self):
        return EngineInfo(name="fake", version="0", extra={"load": self.load_id, "calls": self.calls})


class SlowImportAdapter(FakeAdapter):
    """A fake whose engine import takes seconds or kills its process (``tests.fake_engine_import``)."""

    name = "fake-slow-import"
    engine_modules = ("tests.fake_engine_import",)


WORKERS = (PickyAdapter, ReusableAdapter, SlowImportAdapter)


_DEVICE_PEAK_MB = [0.0]  # like CUDA's allocator statistics: one peak per process, until reset


class BulkyAdapter(FakeAdapter):
    """Touches 300 MB during generation at batch size 1 only, then frees it; its "device" peaks at 300 MiB
    then too, in a per-process peak only ``reset_device_memory_peak`` clears."""

    name = "fake-bulky"

    def generate(self, prompts, max_new_tokens):
        if self.point.batch_size == 1:
            bulk = b"\x01" * (300 * 2**20)  # written, so resident
            del bulk
            _DEVICE_PEAK_MB[0] = max(_DEVICE_PEAK_MB[0], 300.0)
        return super().generate(prompts, max_new_tokens)

    def device_memory(self):
        return _DEVICE_PEAK_MB[0], None

    def reset_device_memory_peak(self) -> None:
        _DEVICE_PEAK_MB[0] = 0.0


WORKERS = (*WORKERS, BulkyAdapter)


class RefusingAdapter(FakeAdapter):
    """An engine that cannot run this model (as llama.cpp's export refuses an architecture): a skip at load."""

    name = "fake-refusing"
    refusal = "fake-refusing cannot export architecture 'llama' to its format"

    def load(self, model, point, settings):
        from harness.adapters.base import PointSkipped

        raise PointSkipped(self.refusal)


class KnobAdapter(FakeAdapter):
    """The fake engine with a speed knob: each step sleeps the seconds written in the file that
    ``$HARNESS_FAKE_KNOB`` names (a build command writes it), so a commit can make it slower."""

    name = "fake-knob"

    def generate(self, prompts, max_new_tokens):
        import os
        from pathlib import Path

        period = float(Path(os.environ["HARNESS_FAKE_KNOB"]).read_text())
        start, times = now_ns(), []
        for _ in range(max_new_tokens):
            time.sleep(period)
            times.append(now_ns())
        return GenerationTrace(
            start, times, len(prompts[0]), len(prompts), [[i % self.period for i in range(len(times))] for _ in prompts]
        )


class Scripted:
    """A device whose logits at each position are given: ``table[position]`` (prompt ignored)."""

    def __init__(self, table):
        self.table, self.position = table, 0

    def prefill(self, tokens):
        self.position = 0
        return self.table[0]

    def decode(self, token):
        self.position += 1
        return self.table[self.position]
