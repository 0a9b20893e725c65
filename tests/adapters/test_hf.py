"""The hf adapter on a tiny seeded Llama: real transformers, real generate, exact token counts."""

from __future__ import annotations

import numpy as np
import pytest

from harness.adapters.base import LoadSettings
from harness.adapters.hf import HFAdapter
from harness.models import prompts
from harness.scenario.sweep import Point
from tests.records import AXES


def point(**axes) -> Point:
    return Point(**{**AXES, **axes})


@pytest.fixture(scope="module")
def prompt(tiny_llama):
    return prompts.synthetic(tiny_llama.tokenizer(), 24, 1)[0]


def loaded(model, dtype="fp32", **axes) -> HFAdapter:
    adapter = HFAdapter()
    adapter.load(model, point(**axes), LoadSettings(dtype=dtype, threads=2))
    return adapter


def test_generate_times_every_token(tiny_llama, prompt):
    trace = loaded(tiny_llama).generate([prompt], 8)
    assert trace.n_generated == 8 and trace.prompt_tokens == 24
    assert trace.start_ns < trace.token_ns[0]
    assert all(a < b for a, b in zip(trace.token_ns, trace.token_ns[1:]))
    assert len(trace.output_ids[0]) == 8


def test_static_cache_of_max_seq_len_gives_the_same_tokens(tiny_llama, prompt):
    dynamic = loaded(tiny_llama).generate([prompt], 8).output_ids
    adapter = loaded(tiny_llama, max_seq_len=64)
    assert adapter.describe().extra["kv_cache"] == "static(64)"
    assert adapter.generate([prompt], 8).output_ids == dynamic


def test_chunked_prefill_gives_the_same_tokens(tiny_llama, prompt):
    whole = loaded(tiny_llama).generate([prompt], 6).output_ids
    assert loaded(tiny_llama, moe_chunk_size=8).generate([prompt], 6).output_ids == whole


def test_beams_and_batches_generate_the_requested_length(tiny_llama, prompt):
    beams = loaded(tiny_llama, beam_width=3).generate([prompt], 5)
    assert beams.n_generated == 5 and len(beams.output_ids[0]) == 5
    batch = loaded(tiny_llama, batch_size=2).generate([prompt, prompt], 5)
    assert batch.batch_size == 2 and batch.output_ids[0] == batch.output_ids[1]


def test_unequal_batch_prompts_are_refused(tiny_llama, prompt):
    with pytest.raises(ValueError, match="equal length"):
        loaded(tiny_llama).generate([prompt, prompt[:-1]], 2)


def test_a_left_padded_batch_of_unequal_prompts_matches_each_prompt_alone(tiny_llama, prompt):
    adapter = loaded(tiny_llama, dtype="fp32")
    prompts = [prompt, prompt[1:4]]  # the second row padded on the left, masked, its positions from 0
    together = adapter.prefill_batch(prompts)
    assert adapter.batch_padding == "left" and together.shape[0] == 2
    for row, alone in zip(together, prompts):
        np.testing.assert_allclose(row, adapter.prefill(alone), atol=1e-4)


def test_stepwise_prefill_decode_reproduces_greedy_generate(tiny_llama, prompt):
    adapter = loaded(tiny_llama)
    expected = adapter.generate([prompt], 6).output_ids[0]
    logits = adapter.prefill(prompt)
    assert logits.dtype == np.float32 and logits.shape == (tiny_llama.tokenizer().get_vocab_size(),)
    tokens = []
    for _ in range(6):
        tokens.append(int(np.argmax(logits)))
        logits = adapter.decode(tokens[-1])
    assert tokens == expected


def test_decode_before_prefill_is_an_error(tiny_llama):
    with pytest.raises(RuntimeError, match="before prefill"):
        loaded(tiny_llama).decode(1)


def test_describe_records_versions_and_precision(tiny_llama):
    info = loaded(tiny_llama, dtype="bf16").describe()
    assert info.name == "transformers" and info.version
    assert info.dtype == "bf16" and info.threads == 2 and info.extra["kv_cache"] == "dynamic"


def test_absent_devices_are_unavailable_with_a_reason():
    import torch

    status = HFAdapter.device_status()
    assert status["cpu"] is None
    if not torch.cuda.is_available():
        assert "sees no cuda device" in status["cuda"]
    assert "has no device 'tpu'" in HFAdapter.supports(point(device="tpu"))
    assert "does not support quantization 'int4_sym'" in HFAdapter.supports(point(quantization="int4_sym"))
