"""The HF reference for the correctness gate: computed once, stored, reused by any runner (its stored types:
``harness.correctness.stored_reference``).

Per prompt the reference holds the greedy tokens of HF transformers (bf16 by default) and, for every
position, the top-M token ids with their log-probabilities (fp32 log-softmax of the logits; ties go
to the lower token id, so top-k order agrees with argmax). It also holds the model's own precision
noise floor: the mean teacher-forced KL between the reference and the same model in fp32, overall
(the mean of per-prompt means) and per phase (``phases``: the prefill position and the decode positions,
each pooled over prompts; references stored before phases lack it and the gate uses the overall floor)
and per position (``positions``: per prompt, the KL at each position, which the gate's paired test pairs
with the device's; references stored before it pair every position with its phase's mean). Per prompt it
also holds the top-M at the last ``prefill_positions`` prompt positions, from one forward over the prompt,
and their floor (``prefill_positions``), which make the gate's prefill phase (``harness.correctness.prefill``).

A stored reference is found by content: the model's checksum (two models that share a name get two files),
the prompt texts and the settings; then checked against the model checksum, the tokenizer and the prompt
token ids, and its content against its own digest (``harness.io.sealed``); a mismatch is refused in one
line, never silently used. One stored by an older harness (before the content key and the digest) is refused
with "rebuild it with --refresh-reference", which writes the new one beside it. The step-wise
math (log-softmax, top-M, the coarse KLs, greedy and teacher-forced stepping) lives in
``harness.correctness.logprobs``.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import numpy as np

from harness.correctness import lengths, positions, prefill, stored_reference
from harness.correctness.kl import phase_floors, position_floors
from harness.correctness.lengths import is_long, on_own_text
from harness.correctness.logprobs import (
    coarse_kl,
    forced_steps,
    greedy_steps,
    iter_forced_logprobs,
)
from harness.correctness.stored_reference import PromptReference, Reference, ReferenceMismatch
from harness.io import compute_once, safe_name
from harness.scenario.gate_section import Gate


def _gate_default(name: str):
    """The scenario's default (its ``gate`` section), written there only."""
    return Gate.model_fields[name].default


# the default: references stored before prefill positions were keyed without it (``legacy_path``)
PREFILL_POSITIONS: int = _gate_default("prefill_positions")


@dataclass(frozen=True)
class ReferenceSettings:
    tokens: int = _gate_default("tokens")
    top_m: int = 64  # ids kept per position: >= the gate's k, and enough mass for the KL
    dtype: str = _gate_default("reference_dtype")
    # None: no noise floor and no second engine, for a reference read only for its tokens and top-M (the stop
    # prompts', ``harness.run.steps.check_stopping``)
    floor_dtype: Optional[str] = "fp32"
    device: str = "cpu"
    threads: Optional[int] = None
    length: Optional[int] = None  # positions of the long prompts (harness.correctness.lengths); None: none
    prefill_positions: int = (
        PREFILL_POSITIONS  # last prompt positions per prompt (harness.correctness.prefill); 0: none
    )


def tokenizer_sha256(hf_dir: Path) -> str:
    return hashlib.sha256((Path(hf_dir) / "tokenizer.json").read_bytes()).hexdigest()


def eos_ids(model, tokenizer) -> list[int]:
    """The model's EOS ids plus the end-of-turn tokens chat models stop on (``ResolvedModel.stop_token_ids``)."""
    return model.stop_token_ids()


class ReferenceStore:
    """References as JSON files under ``root`` (by default ``results/references``)."""

    def __init__(self, root: Path, compute=None):
        self.root = Path(root)
        self.compute = compute or globals()["compute"]  # injectable: tests count how often it runs

    def path_for(self, model, pairs: list[tuple[str, str]], settings: ReferenceSettings) -> Path:
        """Keyed by content: the model's checksum (and the converter that built its checkpoint from a GGUF), the
        prompts and the settings that change the result; two models that share a name get two files."""
        keyed = asdict(settings) | {"threads": None}
        identity = json.dumps(
            {"model": {"checksum": model.checksum, "converter": model.converter}, "prompts": pairs, "settings": keyed},
            sort_keys=True,
        )
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        return self.root / safe_name(model.name) / f"{digest}.json"

    def legacy_path(self, model_name: str, pairs: list[tuple[str, str]], settings: ReferenceSettings) -> Path:
        """Where a reference stored before references were keyed by content sits (model name, prompts and
        settings only): never read, since it may be another model's of the same name."""
        keyed = asdict(settings) | {"threads": None}
        if settings.length is None:
            del keyed["length"]
        if settings.prefill_positions == PREFILL_POSITIONS:
            del keyed["prefill_positions"]
        identity = json.dumps({"prompts": pairs, "settings": keyed}, sort_keys=True)
        return self.root / safe_name(model_name) / f"{hashlib.sha256(identity.encode()).hexdigest()[:16]}.json"

    def load(self, path: Path, model, prompt_ids: list[list[int]]) -> Optional[Reference]:
        if not path.exists():
            return None
        reference = stored_reference.read(path, "stored reference")
        problems = []
        if reference.model["checksum"] != model.checksum:
            problems.append(f"model checksum {reference.model['checksum'][:12]}… != {model.checksum[:12]}…")
        if reference.model["tokenizer_sha256"] != tokenizer_sha256(model.hf_dir):
            problems.append("tokenizer.json differs")
        if [p.prompt_ids + (p.tokens if on_own_text(p.kind) else []) for p in reference.prompts] != prompt_ids:
            problems.append("prompt token ids differ")
        if problems:
            raise ReferenceMismatch(
                f"stored reference {path} does not match this run ({'; '.join(problems)}); "
                "delete it or pass --refresh-reference to recompute"
            )
        return reference

    def get_or_compute(
        self, model, pairs: list[tuple[str, str]], settings: ReferenceSettings, refresh: bool = False
    ) -> tuple[Reference, Path, bool]:
        """(reference, its path, whether it was reused)."""
        tokenizer = model.tokenizer()
        prompt_ids = encode(tokenizer, model.hf_dir, pairs, settings.length)
        path = self.path_for(model, pairs, settings)
        legacy = self.legacy_path(model.name, pairs, settings)
        if not refresh and not path.exists() and legacy.exists():
            raise ReferenceMismatch(
                f"stored reference {legacy}: stored before references were keyed by the model's content (it may "
                f"be another model's of the name {model.name!r}), so it is not read; rebuild it with "
                "--refresh-reference (the new one goes beside it; delete the old file)"
            )
        # Under a lock beside the file: runners sharing a reference directory compute it once, the
        # others wait and read it; the atomic write means no reader ever sees half a file.
        reference, reused = compute_once(
            path,
            lambda p: self.load(p, model, prompt_ids),
            lambda: self.compute(model, pairs, prompt_ids, settings),
            stored_reference.write,
            refresh=refresh,
        )
        return reference, path, reused


def encode(tokenizer, hf_dir: Path, pairs: list[tuple[str, str]], length: Optional[int]) -> list[list[int]]:
    """Token ids per prompt: a long prompt's ``length`` ids whole (``lengths.split`` cuts its head)."""
    from harness.models import prompts

    short = prompts.encode_gate_prompts(tokenizer, hf_dir, [p for p in pairs if not is_long(p[0])])
    if any(is_long(kind) for kind, _ in pairs) and length is None:
        raise ValueError("long gate prompts need the reference's length")
    it = iter(short)
    return [lengths.encode(tokenizer, text, length) if is_long(kind) else next(it) for kind, text in pairs]  # type: ignore[arg-type]


@contextmanager
def hf_engine(model, dtype: str, threads: Optional[int], device: str = "cpu"):
    """HF transformers loaded in ``dtype``: the engine every reference (gate, noise floor, accuracy,
    diagnosis) is computed with; closed on exit."""
    from harness.adapters import registry
    from harness.adapters.base import LoadSettings
    from harness.scenario.sweep import Point

    engine = registry.get("hf")()
    engine.load(
        model,
        Point(adapter="hf", device=device, id=f"hf-reference-{dtype}"),
        LoadSettings(dtype=dtype, threads=threads),
    )
    try:
        yield engine
    finally:
        engine.close()


def compute(model, pairs, prompt_ids, settings: ReferenceSettings) -> Reference:
    """Run HF transformers greedily in ``settings.dtype``; calibrate the noise floor against fp32 (none where
    ``settings.floor_dtype`` is None)."""
    start = time.perf_counter()
    tokenizer = model.tokenizer()
    stop = eos_ids(model, tokenizer)

    references = []
    with hf_engine(model, settings.dtype, settings.threads, settings.device) as engine:
        for (kind, text), ids in zip(pairs, prompt_ids):
            if on_own_text(kind):  # teacher-forced on its own text
                ids, tokens = lengths.split(kind, ids, settings.tokens)
                tops, lps = forced_steps(engine, ids, tokens, settings.top_m)
            else:
                tokens, tops, lps = greedy_steps(engine, ids, settings.tokens, stop, settings.top_m)
            rows = (
                prefill.reference_rows(engine, ids, settings.prefill_positions, settings.top_m)
                if settings.prefill_positions
                else ([], [])
            )
            references.append(PromptReference(kind, text, list(ids), tokens, tops, lps, *rows))
        described = engine.describe()

    import harness

    return Reference(
        model={"name": model.name, "checksum": model.checksum, "tokenizer_sha256": tokenizer_sha256(model.hf_dir)},
        settings={**asdict(settings), "eos_ids": stop},
        versions={
            "harness": harness.__version__,
            "transformers": described.version,
            "torch": described.extra["torch_version"],
            "device_name": described.device_name,
        },
        noise_floor=noise_floor(model, references, settings),
        prompts=references,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        compute_s=time.perf_counter() - start,
    )


def noise_floor(model, references: list[PromptReference], settings: ReferenceSettings) -> dict:
    """The teacher-forced KL between the reference and the same model in ``settings.floor_dtype``: overall, per
    phase, per position bucket and per position; only the method where there is no floor dtype."""
    if settings.floor_dtype is None:
        return {"method": "none: a reference read only for its tokens and top-M"}
    per_prompt, prefill_floors = [], []
    with hf_engine(model, settings.floor_dtype, settings.threads, settings.device) as floor_engine:
        for ref in references:
            device = iter_forced_logprobs(floor_engine, ref.prompt_ids, ref.tokens)
            per_prompt.append([coarse_kl(i, lp, d) for i, lp, d in zip(ref.top_ids, ref.top_logprobs, device)])
            prefill_floors.append(prefill.floor_kls(floor_engine, ref))

    return {
        "kl_mean": float(np.mean([np.mean(kls) for kls in per_prompt])),
        "per_prompt": [float(np.mean(kls)) for kls in per_prompt],
        "phases": phase_floors(per_prompt, prefill_floors),
        "buckets": positions.floors(per_prompt, [len(ref.prompt_ids) for ref in references]),
        "positions": position_floors(per_prompt),
        "prefill_positions": position_floors(prefill_floors),
        "method": f"teacher-forced KL(HF {settings.dtype} || HF {settings.floor_dtype})",
    }
