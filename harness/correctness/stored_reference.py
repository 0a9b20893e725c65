"""The HF reference as stored (``harness.correctness.reference`` computes and keeps it): per prompt the greedy
tokens with the top-M ids and log-probabilities at every position, the model's noise floor, and the settings
it was computed with. Every check that compares against a reference reads these types from here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.errors import HarnessError

# 2: prefill positions (``PromptReference.prefill_*``, ``noise_floor.prefill_positions``); a stored version-1
# reference still parses (``from_dict``). 3: sealed (``harness.io.sealed``: a digest of each part, checked on
# load) and keyed by the model's content; an older file is refused with "rebuild it with --refresh-reference".
SCHEMA_VERSION = 3


class ReferenceMismatch(HarnessError):
    exit_code = 2


@dataclass
class PromptReference:
    kind: str  # plain | chat
    text: str
    prompt_ids: list[int]
    tokens: list[int]  # greedy continuation (stops after an EOS token)
    top_ids: list[list[int]]  # per position: top-M ids
    top_logprobs: list[list[float]]  # per position: their log-probabilities
    # The last prompt positions, ascending (``harness.correctness.prefill``); empty in version-1 references
    prefill_top_ids: list[list[int]] = field(default_factory=list)
    prefill_top_logprobs: list[list[float]] = field(default_factory=list)


@dataclass
class Reference:
    model: dict  # name, checksum, tokenizer_sha256
    settings: dict  # tokens, top_m, dtype, device, eos_ids
    versions: dict
    noise_floor: dict  # kl_mean, per_prompt, phases, positions, prefill_positions (absent in older files), method
    prompts: list[PromptReference]
    created_at: str = ""
    compute_s: float = 0.0
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, data: dict) -> Reference:
        if data.get("schema_version") not in range(1, SCHEMA_VERSION + 1):
            raise ReferenceMismatch(
                f"reference schema_version {data.get('schema_version')!r} is not one of 1..{SCHEMA_VERSION}"
            )
        data = dict(data)
        data["prompts"] = [PromptReference(**p) for p in data["prompts"]]
        return cls(**data)


def write(path: Path, reference: Reference) -> None:
    """Store ``reference`` at ``path`` atomically, sealed with the digest of its content."""
    from harness.io import sealed, write_json_atomic

    write_json_atomic(path, sealed.seal(asdict(reference)), indent=None)


def read(path: Path, what: str) -> Reference:
    """The reference stored at ``path``, once its content matches its digest (``harness.io.sealed``); one
    stored before references were sealed, or edited since, is refused in one line naming the file (``what``:
    the kind of reference) and what differs."""
    from harness.io import read_json, sealed

    data = read_json(path)
    if isinstance(data, dict) and data.get("schema_version") != SCHEMA_VERSION:
        raise ReferenceMismatch(
            f"{what} {path}: stored by another harness version (schema_version {data.get('schema_version')!r}, "
            f"this one reads {SCHEMA_VERSION}); {sealed.REBUILD}"
        )
    return Reference.from_dict(sealed.check(path, data, what))
