"""GGUF header facts (file type, tensor types, precision) for naming and quantizing llama.cpp points.

Checkpoints become GGUF through llama.cpp's own converter (``harness.adapters.llamacpp.converter``); this
module only reads GGUF headers. (It wrote Llama/Mixtral GGUFs itself before; its name is kept for the readers.)
"""

from __future__ import annotations

import struct
from pathlib import Path

from harness.io import per_file

_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")


def _read_header(path: Path) -> tuple[dict, dict[str, int]]:
    """(scalar metadata, tensor type counts) from a GGUF header, skipping arrays such as the vocabulary.

    A plain header walk: gguf-py's reader decodes every vocabulary entry, ~18 s for Gemma's 262k.
    """
    import mmap

    import gguf

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
        pos = 24

        def string(at: int) -> tuple[str, int]:
            (length,) = struct.unpack_from("<Q", data, at)
            return data[at + 8 : at + 8 + length].decode("utf-8", "replace"), at + 8 + length

        def skip(kind: int, at: int) -> int:
            if kind == _STRING:
                return at + 8 + struct.unpack_from("<Q", data, at)[0]
            if kind == _ARRAY:
                inner, count = struct.unpack_from("<IQ", data, at)
                at += 12
                if inner in _SCALAR_BYTES:
                    return at + count * _SCALAR_BYTES[inner]
                if inner == _STRING:  # the vocabulary: 262k strings for Gemma, so the tightest loop
                    length = _U64.unpack_from
                    for _ in range(count):
                        at += 8 + length(data, at)[0]
                    return at
                for _ in range(count):
                    at = skip(inner, at)
                return at
            return at + _SCALAR_BYTES[kind]

        metadata: dict = {}
        formats = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
        for _ in range(n_kv):
            key, pos = string(pos)
            (kind,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if kind in formats:
                metadata[key] = struct.unpack_from(formats[kind], data, pos)[0]
            elif kind == _STRING:
                metadata[key] = string(pos)[0]
            pos = skip(kind, pos)
        counts: dict[str, int] = {}
        for _ in range(n_tensors):
            _, pos = string(pos)
            (n_dims,) = struct.unpack_from("<I", data, pos)
            pos += 4 + 8 * n_dims
            (kind,) = struct.unpack_from("<I", data, pos)
            pos += 12  # type, offset
            name = gguf.GGMLQuantizationType(kind).name
            counts[name] = counts.get(name, 0) + 1
    return metadata, counts


def tensor_types(path: str | Path) -> dict[str, int]:
    """How many tensors of each ggml type the GGUF holds (e.g. {"Q4_K": 27, "F32": 109})."""
    return dict(read_header(path)[1])


def file_type(path: str | Path) -> str:
    """The GGUF's declared file type (e.g. MOSTLY_Q4_K_M), or the dominant tensor type."""
    import gguf

    metadata, counts = read_header(path)
    value = metadata.get("general.file_type")
    if value is None:
        return max(counts, key=counts.get)
    try:
        return gguf.LlamaFileType(value).name
    except ValueError:
        return f"file_type {value}"


def precision(path: str | Path) -> str:
    """The GGUF's precision word for point ids and the report (``MOSTLY_Q4_K_M`` -> ``q4_k_m``)."""
    from harness.records.precision import from_gguf_file_type

    return from_gguf_file_type(file_type(path))


def is_full_precision(path: str | Path) -> bool:
    """True when every tensor is F32, F16 or BF16 (a source llama.cpp's quantizer can start from)."""
    return set(tensor_types(path)) <= {"F32", "F16", "BF16"}


read_header = per_file(_read_header)  # describe() asks once per point; the header walk takes ~0.7 s
