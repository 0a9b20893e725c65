"""An HF checkpoint directory's files, checked before anything reads them.

transformers, tokenizers and safetensors read whatever the directory holds: a ``config.json`` that is a
FIFO or a link to ``/dev/zero`` was read until memory ran out, a missing shard failed deep in a load with
a message naming no file. Every JSON file must be a regular file within the bound on any JSON the harness
reads (``harness.io.MAX_JSON_BYTES``); config and generation config, and the shard indexes, must parse;
weight files (``*.safetensors``, ``*.bin`` and every shard an index names) must be present and regular,
and a safetensors file must hold the bytes its header claims (a download cut short).
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

from harness.io import MAX_JSON_BYTES, check_regular_file, read_json

PARSED = ("config.json", "generation_config.json")  # small, and read by the harness itself
WEIGHT_SUFFIXES = (".safetensors", ".bin")
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
MAX_SAFETENSORS_HEADER = 100 * 2**20  # safetensors' own limit on its JSON header


def _json_object(path: Path) -> dict:
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: holds {type(data).__name__}, expected a JSON object")
    return data


def _shards(directory: Path, index: Path) -> list[Path]:
    weight_map = _json_object(index).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"{index}: weight_map: expected an object of tensor name -> shard file")
    shards = []
    for name in sorted({str(v) for v in weight_map.values()}):
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"{index}: weight_map: shard {name!r} is not a file inside {directory}")
        shards.append(directory / name)
    return shards


def _safetensors(path: Path, size: int) -> None:
    """The header's length and its tensors' end offsets within the file; bounded reads only."""
    if size < 8:
        raise ValueError(f"{path}: {size} bytes, too short for a safetensors file (cut short?)")
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > min(size - 8, MAX_SAFETENSORS_HEADER):
            raise ValueError(f"{path}: header claims {length:,} bytes; the file holds {size:,} (cut short?)")
        try:
            header = json.loads(handle.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise ValueError(f"{path}: the safetensors header is not readable JSON") from None
    ends = [
        info["data_offsets"][1]
        for name, info in (header.items() if isinstance(header, dict) else ())
        if name != "__metadata__" and isinstance(info, dict) and isinstance(info.get("data_offsets"), list)
    ]
    end = 8 + length + max((e for e in ends if isinstance(e, int)), default=0)
    if end > size:
        raise ValueError(
            f"{path}: its tensors end at byte {end:,}, past the end of the {size:,}-byte file (cut short?)"
        )


def _weight(path: Path) -> None:
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"{path}: missing (named by the checkpoint's shard index)")
    size = check_regular_file(path, sys.maxsize)
    if path.suffix == ".safetensors":
        _safetensors(path, size)


def check(directory: Path) -> None:
    """Refuse, with a ValueError naming the file, a checkpoint file no reader should be given."""
    config = directory / "config.json"
    if not config.exists() and not config.is_symlink():
        raise ValueError(f"{directory}: a directory without config.json (expected an HF checkpoint)")
    for path in sorted(directory.glob("*.json")):
        if path.name in PARSED:
            _json_object(path)
        else:
            check_regular_file(path, MAX_JSON_BYTES)
    weights = [p for p in directory.iterdir() if p.suffix in WEIGHT_SUFFIXES]
    for index in INDEXES:
        if (directory / index).exists():
            weights += _shards(directory, directory / index)
    if not weights:
        raise ValueError(
            f"{directory}: no weights (model.safetensors, pytorch_model.bin or a sharded index with its shards)"
        )
    for path in sorted(set(weights)):
        _weight(path)


def problem(directory: Path) -> str | None:
    """Why the checkpoint in ``directory`` cannot be read (one line naming the file), or None."""
    try:
        check(directory)
    except ValueError as exc:
        return str(exc)
    except OSError as exc:
        return f"{exc.filename or directory}: cannot be read ({exc.strerror or exc})"
    return None
