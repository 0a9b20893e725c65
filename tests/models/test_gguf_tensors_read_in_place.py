"""A GGUF's tensors are read where the header walk placed them (``harness.models.gguf_weights``), not through
gguf-py's ``GGUFReader``, which parses every metadata value (seconds for a 262k-entry vocabulary): the same
arrays, shapes and types as gguf-py's reader gives, for every kind of tensor a converter writes."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from harness.models import gguf_weights  # noqa: E402


@pytest.fixture
def written(tmp_path):
    """A GGUF written by gguf-py's own writer: a 20k-entry vocabulary, then F32, F16, Q8_0, Q4_0 and a 3-D
    (stacked experts) tensor."""
    from gguf.quants import quantize

    rng = np.random.default_rng(0)
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_token_list([f"tok{i}" for i in range(20_000)])
    embeddings = rng.standard_normal((8, 64)).astype(np.float32)
    writer.add_tensor("token_embd.weight", embeddings)
    writer.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(64).astype(np.float16))
    for name, kind in (("blk.0.attn_q.weight", "Q8_0"), ("blk.0.attn_k.weight", "Q4_0")):
        qtype = gguf.GGMLQuantizationType[kind]
        data = quantize(rng.standard_normal((64, 64)).astype(np.float32), qtype)
        writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
    writer.add_tensor("blk.0.ffn_up_exps.weight", rng.standard_normal((2, 16, 64)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, embeddings


def test_tensors_in_place_are_gguf_pys_own(written):
    path, _ = written
    architecture, tensors = gguf_weights.tensors_in_place(path)
    reader = gguf.GGUFReader(str(path))
    assert architecture == "llama" and set(tensors) == {t.name for t in reader.tensors}
    for expected in reader.tensors:
        got = tensors[expected.name]
        assert got.tensor_type == expected.tensor_type, expected.name
        assert got.data.dtype == expected.data.dtype and got.data.shape == expected.data.shape, expected.name
        assert np.array_equal(got.data, expected.data), expected.name
    assert {t.tensor_type.name for t in tensors.values()} == {"F32", "F16", "Q8_0", "Q4_0"}


def test_reading_weights_never_parses_the_metadata_with_gguf_pys_reader(written, monkeypatch):
    path, embeddings = written

    def parse_everything(*args, **kwargs):
        raise AssertionError("GGUFReader parses every metadata value: not needed for the weights")

    monkeypatch.setattr(gguf, "GGUFReader", parse_everything)
    config = {"num_hidden_layers": 1, "num_attention_heads": 1}
    stored = gguf_weights.read(path, {"model.embed_tokens.weight": (8, 64)}, config)
    (tensor,) = stored.values()
    assert tensor.stored_name == "token_embd.weight" and tensor.stored_type == "F32"
    assert np.array_equal(tensor.values, embeddings)
