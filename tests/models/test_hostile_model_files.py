"""Model sources checked before anything reads them, through the harness command (a subprocess with a
timeout, so a hang or a runaway allocation is a failure, not a stuck suite): malformed GGUFs, checkpoint
JSON files that are FIFOs or devices, missing or cut-short weights end `harness check` and `harness run`
with one line naming the file, exit 2, before any point runs."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from harness.models import gguf_header

# -- hostile files, built byte by byte -----------------------------------------------------------------


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def gguf(
    *,
    tensors: int | None = None,
    keys: int | None = None,
    array_items: int | None = None,
    offset: int = 0,
    version: int = 3,
) -> bytes:
    """A one-tensor GGUF (32 float32s); each argument overrides one field with a hostile value."""
    kvs = _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    count = 1
    if array_items is not None:  # an array of strings whose count the file cannot hold
        kvs += _string("tokenizer.ggml.tokens") + struct.pack("<II", 9, 8) + struct.pack("<Q", array_items)
        kvs += _string("a") + _string("b")
        count = 2
    info = (
        _string("t") + struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<I", 0) + struct.pack("<Q", offset)
    )
    head = b"GGUF" + struct.pack("<IQQ", version, 1 if tensors is None else tensors, count if keys is None else keys)
    body = head + kvs + info
    body += b"\0" * (-len(body) % 32)
    return body + struct.pack("<32f", *range(32))


def safetensors(values: int = 4) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [values], "data_offsets": [0, 4 * values]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + struct.pack(f"<{values}f", *range(values))


def checkpoint(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text('{"model_type": "llama"}')
    (directory / "model.safetensors").write_bytes(safetensors())
    return directory


# -- through the command -----------------------------------------------------------------------------


def harness(*args, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)


def refused_in_one_line(tmp_path: Path, source: Path, *needles: str) -> None:
    """``harness check`` and ``harness run`` both exit 2 with one ERROR line naming the file; no point runs."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        f"model: {json.dumps(str(source))}\ngeneration: {{max_new_tokens: 2}}\nsweep: {{adapter: [hf]}}\n"
    )
    for command in (["check", scenario], ["run", scenario, "--results", tmp_path / "results", "--no-progress"]):
        done = harness(*command, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        assert len(errors) == 1 and all(n in errors[0] for n in needles), done.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))


HOSTILE_GGUFS = {
    # a 178-byte file claiming 2^60 strings: several GB and a MemoryError traceback before
    "huge-array": (
        lambda: gguf(array_items=2**60),
        "'tokenizer.ggml.tokens': array length is 1,152,921,504,606,846,976",
    ),
    "absurd-keys": (lambda: gguf(keys=2**50), "metadata key-value count is 1,125,899,906,842,624"),
    "absurd-tensors": (lambda: gguf(tensors=2**40), "tensor count is 1,099,511,627,776"),
    "offset-past-end": (lambda: gguf(offset=4096), "tensor 't' ends at byte"),
    "misaligned-offset": (lambda: gguf(offset=4), "not a multiple of the alignment 32"),
    "cut-short": (lambda: gguf()[:60], "the file ends at byte 60"),
    "cut-in-the-data": (lambda: gguf()[:-8], "past the end of the"),
    "not-a-gguf": (lambda: b"PK\x03\x04" + bytes(200), "does not start with the GGUF magic"),
    "version-1": (lambda: gguf(version=1), "GGUF version 1"),
    "empty": (lambda: b"", "too short for a GGUF header"),
}


def test_the_well_formed_gguf_these_are_built_from_passes():
    """The hostile files below differ from this one in one field; it must itself be accepted."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"well-formed-{os.getpid()}.gguf"
    try:
        path.write_bytes(gguf())
        assert gguf_header.problem(path) is None
        import gguf as gguf_py  # the reader the converter uses agrees

        assert [t.name for t in gguf_py.GGUFReader(str(path)).tensors] == ["t"]
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("case", sorted(HOSTILE_GGUFS))
def test_a_malformed_gguf_is_refused_before_any_reader_allocates(tmp_path, case):
    build, needle = HOSTILE_GGUFS[case]
    source = tmp_path / f"{case}.gguf"
    source.write_bytes(build())
    refused_in_one_line(tmp_path, source, f"{case}.gguf", needle)


def test_a_gguf_that_is_a_fifo_is_refused_not_read(tmp_path):
    source = tmp_path / "model.gguf"
    os.mkfifo(source)
    refused_in_one_line(tmp_path, source, "model.gguf", "not a regular file")


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "generation_config.json", "tokenizer_config.json"])
def test_a_checkpoint_json_that_is_a_fifo_is_refused_at_once(tmp_path, name):
    model = checkpoint(tmp_path / "model")
    (model / name).unlink(missing_ok=True)
    os.mkfifo(model / name)  # read until memory ran out (a FIFO with a writer), or blocked forever before
    refused_in_one_line(tmp_path, model, f"model/{name}", "not a regular file")


def test_a_tokenizer_json_linked_to_dev_zero_is_refused(tmp_path):
    model = checkpoint(tmp_path / "model")
    (model / "tokenizer.json").symlink_to("/dev/zero")
    refused_in_one_line(tmp_path, model, "model/tokenizer.json", "not a regular file")


def test_a_missing_shard_is_named(tmp_path):
    model = checkpoint(tmp_path / "model")
    (model / "model.safetensors").rename(model / "model-00001-of-00002.safetensors")
    shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    refused_in_one_line(tmp_path, model, "model/model-00002-of-00002.safetensors", "missing")


def test_a_weight_file_that_is_a_fifo_is_refused(tmp_path):
    model = checkpoint(tmp_path / "model")
    (model / "model.safetensors").unlink()
    os.mkfifo(model / "model.safetensors")
    refused_in_one_line(tmp_path, model, "model/model.safetensors", "not a regular file")


def test_a_safetensors_file_cut_short_is_named(tmp_path):
    model = checkpoint(tmp_path / "model")
    (model / "model.safetensors").write_bytes(safetensors()[:-4])
    refused_in_one_line(tmp_path, model, "model/model.safetensors", "cut short")


def test_a_checkpoint_without_weights_is_named(tmp_path):
    model = checkpoint(tmp_path / "model")
    (model / "model.safetensors").unlink()
    refused_in_one_line(tmp_path, model, "model", "no weights")
