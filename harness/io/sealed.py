"""Stored state that proves what it is: a JSON object written with a digest of each of its parts
(``content_sha256``), checked when it is read back. A reference whose tokens, top ids or floor were edited
after it was written is refused in one line naming the file and the parts that differ, never used.

The digest is per part (top-level keys, the keys of a nested object, and the keys of each object in a list
of objects, ``prompts[0].tokens``), so the refusal can say what was edited. It guards against edits and
damage, not against someone who recomputes the digests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from harness.errors import StoredContentError

DIGEST = "content_sha256"
REBUILD = "rebuild it with --refresh-reference"


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _parts(data: dict) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for key, value in data.items():
        if key == DIGEST:
            continue
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            parts[f"{key}.count"] = len(value)
            for i, item in enumerate(value):
                parts.update({f"{key}[{i}].{k}": v for k, v in item.items()})
        elif isinstance(value, dict) and value:
            parts.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            parts[key] = value
    return parts


def digests(data: dict) -> dict[str, str]:
    """Part name -> the first 16 hex digits of the sha256 of its canonical JSON."""
    return {name: hashlib.sha256(_canonical(value)).hexdigest()[:16] for name, value in _parts(data).items()}


def seal(data: dict) -> dict:
    """``data`` with its digests under ``content_sha256``, ready to write."""
    plain = {k: v for k, v in data.items() if k != DIGEST}
    # round-trip first: the digest must be of what a reader will parse (tuples become lists, and so on)
    plain = json.loads(_canonical(plain))
    return {**plain, DIGEST: digests(plain)}


def differences(data: dict) -> list[str]:
    """The parts of a sealed object whose content no longer matches its digest (edited, added or removed)."""
    stored = data.get(DIGEST)
    if not isinstance(stored, dict):
        return ["(no digest)"]
    found = digests(data)
    changed = [name for name in found if name in stored and stored[name] != found[name]]
    added = [f"{name} (added)" for name in found if name not in stored]
    removed = [f"{name} (removed)" for name in stored if name not in found]
    return changed + added + removed


def check(path: str | Path, data: Any, what: str, rebuild: str = REBUILD) -> dict:
    """``data`` as read from ``path`` when its digests hold; otherwise ``StoredContentError``, one line naming
    ``what`` (the kind of artefact), the file and the parts that differ."""
    if not isinstance(data, dict):
        raise StoredContentError(f"{what} {path}: expected a JSON object; {rebuild}")
    if DIGEST not in data:
        raise StoredContentError(
            f"{what} {path}: stored without a content digest (written by an older harness, or by hand); {rebuild}"
        )
    changed = differences(data)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise StoredContentError(
            f"{what} {path}: content differs from its digest in {shown} (edited or damaged after it was "
            f"written); {rebuild}"
        )
    return {k: v for k, v in data.items() if k != DIGEST}
