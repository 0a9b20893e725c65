"""Test adapters for benchmarks/regression_power.py: the real transformers and llama.cpp adapters with every decode
step delayed by a fixed fraction of its own measured duration (the engine runs the step, the adapter times
it, then sleeps that fraction of it before the next step starts), so a "+5 %" build is 5 % slower per
output token on whatever the machine does that night.

OpenVINO GenAI runs its decode loop in C++ with no per-step hook a Python adapter could delay, so it has
no slowed variant here.
"""

from __future__ import annotations

import time

from harness.adapters.hf import HFAdapter
from harness.adapters.llamacpp import LlamaCppAdapter


def _delayed(step, fraction: float, is_decode):
    def run(*args, **kwargs):
        start = time.perf_counter()
        out = step(*args, **kwargs)
        if is_decode(*args, **kwargs):
            time.sleep(fraction * (time.perf_counter() - start))
        return out

    return run


def _hf_decode(*args, **kwargs) -> bool:
    ids = kwargs.get("input_ids", args[0] if args else None)
    return ids is not None and ids.shape[-1] == 1  # one new token per sequence: a decode step


class _SlowHF(HFAdapter):
    fraction = 0.0

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.forward = _delayed(self.model.forward, self.fraction, _hf_decode)


class _SlowLlama(LlamaCppAdapter):
    fraction = 0.0

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.llm.eval = _delayed(self.llm.eval, self.fraction, lambda tokens: len(tokens) == 1)


def _variant(base: type, engine: str, percent: int, tag: str = "") -> type:
    name = f"{engine}-slow{percent}{tag}"
    return type(name.replace("-", "_"), (base,), {"name": name, "fraction": percent / 100, "__module__": __name__})


# The unchanged build (0 %: same code path, no delay) and the +5 % and +10 % builds, per engine.
# Module-level, so an isolated worker can register them too (harness.run.launchers.worker_serve passes in-process
# adapters by module:name).
VARIANTS = {
    cls.name: cls
    for base, engine in ((_SlowHF, "hf"), (_SlowLlama, "llamacpp"))
    for cls in (_variant(base, engine, 0), _variant(base, engine, 5), _variant(base, engine, 10))
}


def _delayed_period(step, fraction: float, is_decode):
    """As ``_delayed``, but the delay is a fraction of the whole token period (the time since the previous
    decode step ended: the engine's Python loop, sampling and the forward pass), so a tiny model whose
    forward pass is a sliver of the period is still slowed by the stated fraction per output token. The
    delay spins instead of sleeping: on a busy machine a sleeping thread waits for a core when it wakes,
    which costs a tiny model's token more than its own work (even ``sleep(0)`` did)."""
    last: list[float] = []

    def run(*args, **kwargs):
        start = time.perf_counter()
        out = step(*args, **kwargs)
        end = time.perf_counter()
        if is_decode(*args, **kwargs):
            period = end - last[0] if last else end - start
            until = end + fraction * period
            while fraction and time.perf_counter() < until:
                pass
            last[:] = [time.perf_counter()]
        else:
            last.clear()  # a prefill starts a new generation: its first decode step has no period yet
        return out

    return run


class _SlowHFPeriod(HFAdapter):
    fraction = 0.0

    def load(self, model, point, settings):
        super().load(model, point, settings)
        self.model.forward = _delayed_period(self.model.forward, self.fraction, _hf_decode)


# The tiny quick run of regression_power.py (--quick): transformers on the tests' tiny model, slowed by a
# fraction of the whole token period, at +0/5/10 % and at larger changes to find where detection reaches the
# reported minimum detectable change on a noisy machine.
VARIANTS.update({cls.name: cls for cls in (_variant(_SlowHFPeriod, "hfq", p) for p in (0, 5, 10, 25, 50, 100))})
globals().update({cls.__name__: cls for cls in VARIANTS.values()})
