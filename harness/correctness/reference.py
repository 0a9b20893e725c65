"""The HF reference for the correctness gate: computed once, stored, reused by any runner.

Per prompt the reference holds the greedy tokens of HF transformers (bf16 by default) and, for every
position, the top-M token ids with their log-probabilities (fp32 log-softmax of the logits; ties go
to the lower token id, so top-k order agrees with argmax). It also holds the model's own precision
noise floor: the mean teacher-forced KL between the reference and the same model in fp32, overall
(the mean of per-prompt means) and per phase (``phases``: the prefill position and the decode positions,
each pooled over prompts; references stored before phases lack it and the gate uses the overall floor)
and per position (``positions``: per prompt, the KL at each position, which the gate's paired test pairs
with the device's; references stored before it pair every position with its phase's mean).

A stored reference is found by model name, prompt texts and settings, then checked against the
model checksum, the tokenizer and the prompt token ids; a mismatch is refused, never silently used.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from harness.correctness import lengths, positions
from harness.correctness.kl import phase_floors, position_floors
from harness.correctness.lengths import is_long
from harness.errors import HarnessError
from harness.io import compute_once, read_json, safe_name, write_json_atomic

SCHEMA_VERSION = 1


class ReferenceMismatch(HarnessError):
    exit_code = 2


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float32)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def top_ids(logprobs: np.ndarray, k: int) -> np.ndarray:
    """Ids of the k largest entries, largest first, ties toward the lower id."""
    k = min(k, logprobs.shape[0])
    candidates = np.argpartition(-logprobs, k - 1)[:k]
    # widen to every id tied with the k-th value, then order by (-logprob, id)
    cutoff = logprobs[candidates].min()
    candidates = np.flatnonzero(logprobs >= cutoff)
    order = np.lexsort((candidates, -logprobs[candidates]))
    return candidates[order][:k]


@dataclass
class PromptReference:
    kind: str  # plain | chat
    text: str
    prompt_ids: list[int]
    tokens: list[int]  # greedy continuation (stops after an EOS token)
    top_ids: list[list[int]]  # per position: top-M ids
    top_logprobs: list[list[float]]  # per position: their log-probabilities


@dataclass
class Reference:
    model: dict  # name, checksum, tokenizer_sha256
    settings: dict  # tokens, top_m, dtype, device, eos_ids
    versions: dict
    noise_floor: dict  # kl_mean, per_prompt, phases (absent in older files), method
    prompts: list[PromptReference]
    created_at: str = ""
    compute_s: float = 0.0
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, data: dict) -> Reference:
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ReferenceMismatch(f"reference schema_version {data.get('schema_version')!r} is not {SCHEMA_VERSION}")
        data = dict(data)
        data["prompts"] = [PromptReference(**p) for p in data["prompts"]]
        return cls(**data)


@dataclass(frozen=True)
class ReferenceSettings:
    tokens: int = 32
    top_m: int = 64  # ids kept per position: >= the gate's k, and enough mass for the KL
    dtype: str = "bf16"
    floor_dtype: str = "fp32"
    device: str = "cpu"
    threads: Optional[int] = None
    length: Optional[int] = None  # positions of the long prompts (harness.correctness.lengths); None: none


def tokenizer_sha256(hf_dir: Path) -> str:
    return hashlib.sha256((Path(hf_dir) / "tokenizer.json").read_bytes()).hexdigest()


def eos_ids(model, tokenizer) -> list[int]:
    """The model's EOS ids plus the end-of-turn tokens chat models stop on."""
    ids = set(model.eos_token_ids())
    for name in ("<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>"):
        token_id = tokenizer.token_to_id(name)
        if token_id is not None:
            ids.add(token_id)
    return sorted(ids)


def greedy_steps(adapter, prompt_ids: Sequence[int], n_tokens: int, stop_ids: Sequence[int], top_m: int):
    """Greedy-decode step by step; return (tokens, top ids per step, top logprobs per step)."""
    tokens, ids_per_step, lps_per_step = [], [], []
    logits = adapter.prefill(prompt_ids)
    for _ in range(n_tokens):
        logprobs = log_softmax(logits)
        best = top_ids(logprobs, top_m)
        ids_per_step.append(best.tolist())
        lps_per_step.append([round(float(v), 6) for v in logprobs[best]])
        tokens.append(int(best[0]))
        if tokens[-1] in stop_ids:
            break
        logits = adapter.decode(tokens[-1])
    return tokens, ids_per_step, lps_per_step


def forced_steps(adapter, prompt_ids: Sequence[int], tokens: Sequence[int], top_m: int):
    """Teacher forcing: (top ids per position, their logprobs) of the given continuation."""
    ids_per_step, lps_per_step = [], []
    for logprobs in iter_forced_logprobs(adapter, prompt_ids, tokens):
        best = top_ids(logprobs, top_m)
        ids_per_step.append(best.tolist())
        lps_per_step.append([round(float(v), 6) for v in logprobs[best]])
    return ids_per_step, lps_per_step


def iter_forced_logprobs(adapter, prompt_ids: Sequence[int], tokens: Sequence[int]) -> Iterator[np.ndarray]:
    """Teacher forcing: the device's log-probabilities at every position of the given continuation, one
    position at a time (a long prompt's full-vocabulary rows would not fit in memory together)."""
    yield log_softmax(adapter.prefill(prompt_ids))
    for token in tokens[:-1]:
        yield log_softmax(adapter.decode(token))


def forced_logprobs(adapter, prompt_ids: Sequence[int], tokens: Sequence[int]) -> list[np.ndarray]:
    """``iter_forced_logprobs`` as a list."""
    return list(iter_forced_logprobs(adapter, prompt_ids, tokens))


def coarse_kl(ref_ids: Sequence[int], ref_logprobs: Sequence[float], device_logprobs: np.ndarray) -> float:
    """KL(reference || device) over the reference's top-M tokens plus one bucket for the rest.

    Coarsening can only lower a KL (data-processing inequality), so this never overstates divergence.
    """
    p_ref = np.exp(np.asarray(ref_logprobs, dtype=np.float64))
    lp_dev = device_logprobs[np.asarray(ref_ids)].astype(np.float64)
    kl = float(np.sum(p_ref * (np.asarray(ref_logprobs, dtype=np.float64) - lp_dev)))
    tail_ref = max(0.0, 1.0 - p_ref.sum())
    tail_dev = max(1e-12, 1.0 - np.exp(lp_dev).sum())
    if tail_ref > 1e-12:
        kl += tail_ref * np.log(tail_ref / tail_dev)
    return max(kl, 0.0)


def coarse_kl_reverse(ref_ids: Sequence[int], ref_logprobs: Sequence[float], device_logprobs: np.ndarray) -> float:
    """KL(device || reference) over the same partition as ``coarse_kl`` (the reference's top-M plus a
    tail bucket): also a lower bound of the full-vocabulary KL."""
    lp_ref = np.asarray(ref_logprobs, dtype=np.float64)
    lp_dev = device_logprobs[np.asarray(ref_ids)].astype(np.float64)
    p_dev = np.exp(lp_dev)
    kl = float(np.sum(p_dev * (lp_dev - lp_ref)))
    tail_dev = max(0.0, 1.0 - p_dev.sum())
    tail_ref = max(1e-12, 1.0 - np.exp(lp_ref).sum())
    if tail_dev > 1e-12:
        kl += tail_dev * np.log(tail_dev / tail_ref)
    return max(kl, 0.0)


class ReferenceStore:
    """References as JSON files under ``root`` (by default ``results/references``)."""

    def __init__(self, root: Path, compute=None):
        self.root = Path(root)
        self.compute = compute or globals()["compute"]  # injectable: tests count how often it runs

    def path_for(self, model_name: str, pairs: list[tuple[str, str]], settings: ReferenceSettings) -> Path:
        keyed = asdict(settings) | {"threads": None}
        if settings.length is None:  # references stored before long prompts keep their keys
            del keyed["length"]
        identity = json.dumps({"prompts": pairs, "settings": keyed}, sort_keys=True)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        return self.root / safe_name(model_name) / f"{digest}.json"

    def load(self, path: Path, model, prompt_ids: list[list[int]]) -> Optional[Reference]:
        if not path.exists():
            return None
        reference = Reference.from_dict(read_json(path))
        problems = []
        if reference.model["checksum"] != model.checksum:
            problems.append(f"model checksum {reference.model['checksum'][:12]}… != {model.checksum[:12]}…")
        if reference.model["tokenizer_sha256"] != tokenizer_sha256(model.hf_dir):
            problems.append("tokenizer.json differs")
        if [p.prompt_ids + (p.tokens if is_long(p.kind) else []) for p in reference.prompts] != prompt_ids:
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
        path = self.path_for(model.name, pairs, settings)
        # Under a lock beside the file: runners sharing a reference directory compute it once, the
        # others wait and read it; the atomic write means no reader ever sees half a file.
        reference, reused = compute_once(
            path,
            lambda p: self.load(p, model, prompt_ids),
            lambda: self.compute(model, pairs, prompt_ids, settings),
            lambda p, ref: write_json_atomic(p, asdict(ref), indent=None),
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
    """Run HF transformers greedily in ``settings.dtype``; calibrate the noise floor against fp32."""
    start = time.perf_counter()
    tokenizer = model.tokenizer()
    stop = eos_ids(model, tokenizer)

    references = []
    with hf_engine(model, settings.dtype, settings.threads, settings.device) as engine:
        for (kind, text), ids in zip(pairs, prompt_ids):
            if is_long(kind):  # teacher-forced on its own text
                ids, tokens = lengths.split(kind, ids, settings.tokens)
                tops, lps = forced_steps(engine, ids, tokens, settings.top_m)
            else:
                tokens, tops, lps = greedy_steps(engine, ids, settings.tokens, stop, settings.top_m)
            references.append(PromptReference(kind, text, list(ids), tokens, tops, lps))
        describe = engine.describe()

    per_prompt = []
    with hf_engine(model, settings.floor_dtype, settings.threads, settings.device) as floor_engine:
        for ref in references:
            device = iter_forced_logprobs(floor_engine, ref.prompt_ids, ref.tokens)
            per_prompt.append([coarse_kl(i, lp, d) for i, lp, d in zip(ref.top_ids, ref.top_logprobs, device)])

    import harness

    return Reference(
        model={"name": model.name, "checksum": model.checksum, "tokenizer_sha256": tokenizer_sha256(model.hf_dir)},
        settings={**asdict(settings), "eos_ids": stop},
        versions={
            "harness": harness.__version__,
            "transformers": describe["engine_version"],
            "torch": describe["torch_version"],
            "device_name": describe["device_name"],
        },
        noise_floor={
            "kl_mean": float(np.mean([np.mean(kls) for kls in per_prompt])),
            "per_prompt": [float(np.mean(kls)) for kls in per_prompt],
            "phases": phase_floors(per_prompt),
            "buckets": positions.floors(per_prompt, [len(ref.prompt_ids) for ref in references]),
            "positions": position_floors(per_prompt),
            "method": f"teacher-forced KL(HF {settings.dtype} || HF {settings.floor_dtype})",
        },
        prompts=references,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        compute_s=time.perf_counter() - start,
    )
