"""A bounded walk of a GGUF file's header, checked against the file's size before any reader allocates.

gguf-py's ``GGUFReader`` (and llama.cpp) size their buffers by what the header claims: a 178-byte file
whose metadata claims an array of 2^60 items drove a run to several GB and a ``MemoryError``. This walk
reads the header through a memory map and checks every count, length and offset against the bytes that
are left before it moves on, so it never holds more than the file justifies and ends on the first
impossible value with one line: the file, the field and what was expected.

Format (v2 and v3, little-endian): magic ``GGUF``, version u32, tensor count u64, key-value count u64;
each key-value: key string (u64 length + UTF-8), value type u32, value (a string, an array: item type
u32 + count u64 + items, or a scalar); each tensor: name string, dimension count u32, dims u64 each,
ggml type u32, offset u64 into the data section, which starts at the next multiple of
``general.alignment`` (32 by default) after the tensor infos.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from harness.io import per_file

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 used 32-bit counts and is read by no current tool
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NESTING = 4  # arrays of arrays; real files have none deeper than one
DEFAULT_ALIGNMENT = 32
_STRING, _ARRAY = 8, 9
VOCABULARY = "tokenizer.ggml.tokens"  # the array whose length is the model's vocabulary size
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
# the fewest bytes a value of a type takes: what a claimed count is checked against before any walk
_LEAST = {**{t: struct.calcsize(f) for t, f in _SCALARS.items()}, _STRING: 8, _ARRAY: 12}
_KV_LEAST = 8 + 4 + 1  # empty key, type, one-byte value
_TENSOR_LEAST = 8 + 4 + 4 + 8  # empty name, no dims, type, offset


class BadHeader(ValueError):
    """The header is impossible for this file; the message names the file and the field."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the header places it, checked against the file: its data lies inside it."""

    name: str
    dims: tuple[int, ...]  # ggml order: the fastest-varying dimension first
    kind: int  # ggml type
    start: int  # the first byte of its data in the file
    nbytes: int


@dataclass(frozen=True)
class Header:
    version: int
    tensors: int
    keys: int
    architecture: str | None
    data_offset: int  # where the tensor data section starts
    vocabulary: int | None = None  # how many entries tokenizer.ggml.tokens holds (None: no vocabulary)
    tensor_infos: tuple[TensorInfo, ...] = ()


class _Walk:
    def __init__(self, view, path: Path):
        self.view, self.path, self.size, self.pos = view, path, len(view), 0
        self.items = 0  # the length of the last array walked

    def fail(self, message: str) -> BadHeader:
        return BadHeader(f"{self.path}: {message}")

    def take(self, count: int, what: str) -> int:
        """Advance past ``count`` bytes of ``what``; the start offset. Refuses what the file cannot hold."""
        if count > self.size - self.pos:
            raise self.fail(
                f"{what} at byte {self.pos:,} needs {count:,} bytes, but the file ends at byte {self.size:,} "
                "(cut short, or not a GGUF)"
            )
        start, self.pos = self.pos, self.pos + count
        return start

    def unpack(self, fmt: str, what: str):
        return struct.unpack_from(fmt, self.view, self.take(struct.calcsize(fmt), what))[0]

    def count(self, what: str, least: int) -> int:
        """A u64 count of items of at least ``least`` bytes each, refused when the rest of the file cannot
        hold that many: the check that keeps every later loop and allocation bounded by the file."""
        claimed = self.unpack("<Q", what)
        room = (self.size - self.pos) // least
        if claimed > room:
            raise self.fail(
                f"{what} is {claimed:,}, but the {self.size:,}-byte file has room for at most {room:,} "
                "(a corrupt or hostile header)"
            )
        return claimed

    def string(self, what: str) -> bytes:
        length = self.unpack("<Q", f"{what} length")
        return bytes(self.view[self.take(length, what) : self.pos])

    def text(self, what: str) -> str:
        raw = self.string(what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} {raw[:40]!r} is not UTF-8 text") from None

    def value(self, kind: int, what: str, depth: int = 0):
        """Read (for scalars and strings) or skip (arrays) one value; bounded by ``count``."""
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind], what)
        if kind == _STRING:
            return self.string(what)
        if kind != _ARRAY:
            raise self.fail(f"{what}: unknown value type {kind} (GGUF types are 0-12)")
        if depth >= MAX_NESTING:
            raise self.fail(f"{what}: arrays nested more than {MAX_NESTING} deep")
        item = self.unpack("<I", f"{what} item type")
        if item not in _LEAST:
            raise self.fail(f"{what}: unknown array item type {item} (GGUF types are 0-12)")
        items = self.items = self.count(f"{what}: array length", _LEAST[item])
        if item in _SCALARS:  # fixed size: skip them all at once
            self.take(items * _LEAST[item], f"{what}: array of {items:,} items")
        elif item == _STRING:  # a vocabulary: 262k strings in Gemma's, so the loop is kept tight
            view, size, pos, length = self.view, self.size, self.pos, struct.Struct("<Q")
            for index in range(items):
                if size - pos < 8 or (end := pos + 8 + length.unpack_from(view, pos)[0]) > size:
                    self.pos = pos
                    raise self.fail(f"{what}: string {index:,} of {items:,} runs past the end of the file (cut short?)")
                pos = end
            self.pos = pos
        else:
            for _ in range(items):
                self.value(item, what, depth + 1)
        return None


def _quant_sizes() -> dict[int, tuple[int, int]]:
    """ggml type -> (elements per block, bytes per block), from gguf-py's table (the one llama.cpp keeps)."""
    from gguf.constants import GGML_QUANT_SIZES

    return {int(kind): sizes for kind, sizes in GGML_QUANT_SIZES.items()}


def _walk(view, path: Path) -> Header:
    walk = _Walk(view, path)
    if walk.size < 4 or bytes(view[:4]) != MAGIC:
        raise walk.fail(f"does not start with the GGUF magic {MAGIC!r} (not a GGUF file, or an empty one)")
    walk.pos = 4
    version = walk.unpack("<I", "version")
    if version not in VERSIONS:
        raise walk.fail(f"GGUF version {version}; this harness reads versions {', '.join(map(str, VERSIONS))}")
    tensors = walk.unpack("<Q", "tensor count")
    keys = walk.count("metadata key-value count", _KV_LEAST)
    metadata: dict[str, object] = {}
    vocabulary = None
    for _ in range(keys):
        key = walk.text("metadata key")
        if key in metadata:
            raise walk.fail(f"metadata key {key!r} appears twice")
        kind = walk.unpack("<I", f"metadata key {key!r}: value type")
        metadata[key] = walk.value(kind, f"metadata key {key!r}")
        if key == VOCABULARY and kind == _ARRAY:
            vocabulary = walk.items
    room = (walk.size - walk.pos) // _TENSOR_LEAST
    if tensors > room:
        raise walk.fail(
            f"tensor count is {tensors:,}, but the {walk.size:,}-byte file has room for at most {room:,} "
            "(a corrupt or hostile header)"
        )
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise walk.fail(f"general.alignment is {alignment!r}; expected a power of two")
    sizes = _quant_sizes()
    infos: dict[str, tuple[tuple[int, ...], int, int, int]] = {}  # name -> (dims, type, offset, bytes)
    for _ in range(tensors):
        name = walk.text("tensor name")
        where = f"tensor {name!r}"
        if name in infos:
            raise walk.fail(f"{where} appears twice")
        n_dims = walk.unpack("<I", f"{where}: dimension count")
        if n_dims > MAX_DIMS:
            raise walk.fail(f"{where}: {n_dims} dimensions; ggml tensors have at most {MAX_DIMS}")
        dims = [walk.unpack("<Q", f"{where}: dimension {i}") for i in range(n_dims)]
        kind = walk.unpack("<I", f"{where}: type")
        offset = walk.unpack("<Q", f"{where}: offset")
        if kind not in sizes:
            raise walk.fail(f"{where}: unknown ggml type {kind}")
        block, block_bytes = sizes[kind]
        elements = 1
        for dim in dims:
            elements *= dim
        if dims and dims[0] % block:
            raise walk.fail(f"{where}: first dimension {dims[0]} is not a multiple of its type's block of {block}")
        if offset % alignment:
            raise walk.fail(f"{where}: offset {offset:,} is not a multiple of the alignment {alignment}")
        infos[name] = (tuple(dims), kind, offset, elements // block * block_bytes)
    data_offset = -(-walk.pos // alignment) * alignment
    for name, (_, _, offset, nbytes) in infos.items():
        end = data_offset + offset + nbytes
        if end > walk.size:
            raise walk.fail(
                f"tensor {name!r} ends at byte {end:,}, past the end of the {walk.size:,}-byte file (cut short?)"
            )
    arch = metadata.get("general.architecture")
    name = arch.decode("utf-8", "replace") if isinstance(arch, bytes) else None
    placed = tuple(
        TensorInfo(tensor, dims, kind, data_offset + offset, nbytes)
        for tensor, (dims, kind, offset, nbytes) in infos.items()
    )
    return Header(version, tensors, keys, name, data_offset, vocabulary, placed)


def _read(path: Path) -> Header:
    # O_NONBLOCK: a FIFO with no writer would block the open; fstat then refuses it without reading
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise BadHeader(f"{path}: a pipe, socket, device or directory, not a regular file")
        if info.st_size < 4:
            raise BadHeader(f"{path}: {info.st_size} bytes, too short for a GGUF header (cut short?)")
        with mmap.mmap(handle, 0, access=mmap.ACCESS_READ) as view:  # pages are read as the walk reaches them
            return _walk(view, path)
    finally:
        os.close(handle)


# once per file version: planning and every point's resolve ask again; a 262k-token vocabulary takes ~0.2 s
read = per_file(_read, entries=16)


def problem(path: str | Path) -> str | None:
    """Why the GGUF at ``path`` cannot be read (one line naming it), or None."""
    try:
        read(path)
    except BadHeader as exc:
        return str(exc)
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc})"
    return None
