"""The GGUF header walk (``gguf_export.read_header``) reads the scalars after a vocabulary it skips."""

from __future__ import annotations

import struct

import pytest

from harness.adapters.llamacpp import gguf_export


def text(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("<Q", len(raw)) + raw


def test_the_scalars_after_a_skipped_vocabulary_are_read(tmp_path):
    pytest.importorskip("gguf")
    tokens = ["<bos>", "a", "", "ünï"] * 1000
    header = b"GGUF" + struct.pack("<IQQ", 3, 2, 4)
    header += text("general.file_type") + struct.pack("<II", 4, 15)
    header += text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(tokens)) + b"".join(map(text, tokens))
    header += text("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2) + struct.pack("<ff", 0.5, 1.0)
    header += text("general.name") + struct.pack("<I", 8) + text("tiny")
    for name, kind in (("a.weight", 12), ("b.weight", 0)):  # Q4_K, F32
        header += text(name) + struct.pack("<IQ", 1, 256) + struct.pack("<IQ", kind, 0)
    path = tmp_path / "tiny.gguf"
    path.write_bytes(header + b"\0" * 64)
    metadata, counts = gguf_export.read_header(path)
    assert metadata == {"general.file_type": 15, "general.name": "tiny"}
    assert counts == {"Q4_K": 1, "F32": 1}
    assert gguf_export.file_type(path) == "MOSTLY_Q4_K_M"
