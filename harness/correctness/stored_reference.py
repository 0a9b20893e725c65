"""The HF reference as stored (``harness.correctness.reference`` computes and keeps it): per prompt the greedy
tokens with the top-M ids and log-probabilities at every position, the model's noise floor, and the settings
it was computed with. Every check that compares against a reference reads these types from here."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import HarnessError

# 2: prefill positions (``PromptReference.prefill_*``, ``noise_floor.prefill_positions``); a stored version-1
# reference still loads (same-weights ones have none), and the HF store recomputes it in place.
SCHEMA_VERSION = 2


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
