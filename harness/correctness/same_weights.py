"""The same-weights reference: a quantized point against its own weights on a trusted engine path.

The HF reference answers "is it still the model?": a quantized point drifts from it by design, so there
drift is reported, not failed, and a port bug hides inside the quantization cost. The same-weights
reference answers "does this port run its weights right?": the point's own quantized weights (the same
OpenVINO IR, the same GGUF) run on a trusted path of the same engine (``Adapter.trusted_twin``), with the
HF reference's prompts, token count and top-M. Its noise floor is that of identical weights (the twin
against itself with only its activation precision or threads changed), so drift there is a bug.

Stored like the HF reference: computed once under a lock beside the file, keyed by the content of the
twin's weights (their sha256, ``harness.io.file_sha256``: a file patched in place with the same size gets
a new reference), the HF model's checksum, the engine's version, the prompt token ids and the settings,
sealed with a digest of its content, and refused when they do not match. Like the HF reference it holds the
last prompt positions of every prompt (the gate's prefill phase, ``harness.correctness.prefill``), here from
one twin prefill per prefix.

The twin shares every fault written into the artefact; the dequantized check
(``harness.correctness.dequantized``) reads the artefact back against the HF checkpoint and catches those.
Verdict (``combine``): the worse of the model verdict (against HF, where a quantized point's drift is
only reported), the own-weights verdict (where drift is a failure) and the dequantized verdict.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np

from harness.correctness import prefill, stored_reference
from harness.correctness.logprobs import coarse_kl, forced_logprobs, greedy_steps
from harness.correctness.outcome import NotRun
from harness.correctness.stored_reference import PromptReference, Reference, ReferenceMismatch
from harness.io import compute_once, safe_name
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import NOT_JUDGED, PASS
from harness.records.own_weights import SameWeights
from harness.scenario.gate_section import GateSettings

if TYPE_CHECKING:
    from harness.adapters.base import Adapter
    from harness.adapters.trusted_twin import Twin
    from harness.scenario.sweep import Point

# Identical weights on two paths of one engine can agree to the last bit (a bf16 hint ignored by a CPU
# without bf16, llama.cpp at another thread count): a floor of ~0 would make any rounding a failure. On
# tiny-llama INT8, OpenVINO's f32 and bf16 CPU paths sit ~1e-4 apart, a decode-position bug ~1e-1.
MIN_FLOOR = 1e-4
UNQUANTIZED = "unquantized point: the HF reference already runs the model's own weights"


def skip_reason(adapter: Adapter, point: Point, correctness: Correctness) -> Optional[str]:
    """Why this point gets no same-weights comparison, from what is known before a twin is built, or None."""
    if correctness.verdict is None:
        return f"the gate did not run: {correctness.skipped}" if correctness.skipped else "the gate did not run"
    if not adapter.runs_quantized(point):
        return UNQUANTIZED
    return None


def path_for(root: Path, hf: Reference, twin: Twin, folder: str = "same-weights") -> Path:
    identity = json.dumps(
        {
            "twin": twin.key,
            "model": hf.model["checksum"],  # two models of one name whose artefacts coincide: two references
            "prompt_ids": [p.prompt_ids for p in hf.prompts],
            "prefill_positions": hf.settings.get("prefill_positions"),
            "tokens": hf.settings["tokens"],
            "top_m": hf.settings["top_m"],
            "eos_ids": hf.settings["eos_ids"],
            "versions": twin.versions,
            "floor": twin.floor_method,  # another floor method is another reference
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return Path(root) / safe_name(hf.model["name"]) / folder / f"{digest}.json"


def compute(twin: Twin, hf: Reference) -> Reference:
    """The twin's greedy tokens and top-M per position on the HF reference's prompts, and the floor:
    teacher-forced KL(twin reference || twin floor variant), raised to ``MIN_FLOOR``."""
    from harness.correctness.kl import phase_floors, position_floors

    start = time.perf_counter()
    settings = hf.settings
    wanted = settings.get("prefill_positions")  # None: an HF reference without prefill positions
    prompts = []
    with twin.open("reference") as engine:
        for ref in hf.prompts:
            tokens, tops, lps = greedy_steps(
                engine, ref.prompt_ids, settings["tokens"], settings["eos_ids"], settings["top_m"]
            )
            rows = prefill.stepwise_rows(engine, ref.prompt_ids, wanted, settings["top_m"]) if wanted else ([], [])
            prompts.append(PromptReference(ref.kind, ref.text, list(ref.prompt_ids), tokens, tops, lps, *rows))
    per_prompt, prefill_floors = [], []
    with twin.open("floor") as engine:
        for ref in prompts:
            device = forced_logprobs(engine, ref.prompt_ids, ref.tokens)
            per_prompt.append([coarse_kl(i, lp, d) for i, lp, d in zip(ref.top_ids, ref.top_logprobs, device)])
            prefill_floors.append(prefill.measure(engine, ref) or [])
    measured = float(np.mean([np.mean(kls) for kls in per_prompt]))
    phases = {
        phase: {**floor, "kl_mean": None if floor["kl_mean"] is None else max(floor["kl_mean"], MIN_FLOOR)}
        for phase, floor in phase_floors(per_prompt, prefill_floors if wanted else None).items()
    }
    import harness

    return Reference(
        model={**hf.model, "engine": twin.engine, "weights": twin.weights, "key": twin.key},
        settings={
            "tokens": settings["tokens"],
            "top_m": settings["top_m"],
            "eos_ids": settings["eos_ids"],
            "twin": twin.engine,
            "prefill_positions": wanted,
        },
        versions={"harness": harness.__version__, **twin.versions},
        noise_floor={
            "kl_mean": max(measured, MIN_FLOOR),
            "measured_kl_mean": measured,
            "minimum": MIN_FLOOR,
            "per_prompt": [float(np.mean(kls)) for kls in per_prompt],
            "phases": phases,
            "positions": position_floors(per_prompt),
            **({"prefill_positions": prefill_floors} if wanted else {}),
            "method": twin.floor_method,
        },
        prompts=prompts,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        compute_s=time.perf_counter() - start,
    )


def load(path: Path, twin: Twin, hf: Reference, folder: str = "same-weights") -> Optional[Reference]:
    if not path.exists():
        return None
    reference = stored_reference.read(path, f"stored {folder} reference")
    problems = []
    if reference.settings.get("prefill_positions") != hf.settings.get("prefill_positions"):
        problems.append("prefill positions differ")
    if reference.model.get("key") != twin.key:
        problems.append(f"weights {reference.model.get('key')!r} != {twin.key!r}")
    if reference.model.get("checksum") != hf.model["checksum"]:
        problems.append("model checksum differs")
    if [p.prompt_ids for p in reference.prompts] != [p.prompt_ids for p in hf.prompts]:
        problems.append("prompt token ids differ")
    if problems:
        raise ReferenceMismatch(
            f"stored same-weights reference {path} does not match this run "
            f"({'; '.join(problems)}); delete it or pass --refresh-reference to recompute"
        )
    return reference


def get_or_compute(
    root: Path, twin: Twin, hf: Reference, refresh: bool = False, folder: str = "same-weights"
) -> tuple[Reference, Path, bool]:
    """(reference, its path, whether it was reused): computed once by whichever runner gets the lock."""
    path = path_for(root, hf, twin, folder)
    reference, reused = compute_once(
        path,
        lambda p: load(p, twin, hf, folder),
        lambda: compute(twin, hf),
        stored_reference.write,
        refresh=refresh,
    )
    return reference, path, reused


def compare(adapter: Adapter, reference: Reference, settings: GateSettings, on_prompt=None) -> Correctness | NotRun:
    """The gate's own comparison against the same-weights reference; drift always fails there."""
    from harness.correctness import gate

    return gate.run(adapter, reference, replace(settings, fail_on_drift=True), on_prompt)


def combine(
    model_verdict: Optional[str],
    own_verdict: Optional[str],
    dequantized_verdict: Optional[str] = None,
    dequantized_model_verdict: Optional[str] = None,
) -> tuple[Optional[str], Optional[str]]:
    """(the point's verdict, the reason it changed or None), from three comparisons that each catch what
    the others cannot:

    - the model verdict (against HF): drift there is the quantization cost, reported, not failed;
    - the own-weights verdict (against the twin, the same artefact on a trusted engine path): only
      ``pass`` is clean, since drift between identical weights is a kernel or plugin bug (``not judged``
      fails nothing but leaves a passing point not judged);
    - the dequantized verdict (the artefact read back row by row against the HF checkpoint,
      ``harness.correctness.dequantized``): ``fail`` when the artefact holds other weights than the
      checkpoint, a converter bug the twin shares and so cannot see;
    - the dequantized-model verdict (against HF transformers running the artefact's dequantized weights,
      ``harness.correctness.dequantized_model``): ``fail`` fails, since the weights are identical and a
      kernel fault of the engine (which its twin shares) is what is left. Where its floor models the
      engine's rounding (llama.cpp: Q8_0/Q8_K inputs, f16 KV) the gate already calls drift ``fail``;
      against the bf16 floor of a twin without that model (OpenVINO) drift is only reported, as
      quantized kernels round activations beyond bf16 (clean Gemma Q4_K_M: 7.7x in prefill).

    Any of the last three failing fails the point; otherwise the model verdict stands."""
    if model_verdict == "fail":
        return "fail", None
    if own_verdict not in (None, PASS, NOT_JUDGED):
        return "fail", (
            f"against its own weights the point is {own_verdict}: identical weights on a trusted path "
            "disagree beyond their noise floor, a port bug rather than quantization"
        )
    if dequantized_verdict == "fail":
        return "fail", (
            "the dequantized artefact differs from the HF checkpoint beyond its quantization: the weights "
            "were written wrong (a converter bug), which the same-weights twin shares"
        )
    if dequantized_model_verdict == "fail":
        return "fail", (
            f"against its own weights dequantized in transformers the point is {dequantized_model_verdict}: "
            "identical weights on another engine disagree beyond its activation rounding, a kernel or runtime "
            "fault of this engine (which its twin, on the same engine, may share)"
        )
    if own_verdict == NOT_JUDGED and model_verdict == PASS:
        return NOT_JUDGED, "against its own weights the KL tier was not judged (too few teacher-forced positions)"
    if dequantized_model_verdict == NOT_JUDGED and model_verdict == PASS:
        return NOT_JUDGED, (
            "against its dequantized weights in transformers the KL tier was not judged (too few teacher-forced "
            "positions)"
        )
    return model_verdict, None


def summary(result: Correctness, reference: Reference, model_verdict: Optional[str], report: str) -> SameWeights:
    return SameWeights(
        verdict=result.verdict,
        model_verdict=model_verdict,
        reasons=result.reasons,
        mode=result.mode,
        kl_mean=result.kl_mean,
        noise_floor=result.noise_floor,
        kl_ratio=result.kl_ratio,
        top1_match_rate=result.top1_match_rate,
        free_divergence_index=result.free_divergence_index,
        engine=reference.model.get("engine"),
        weights=reference.model.get("weights"),
        floor_method=reference.noise_floor.get("method"),
        created_at=reference.created_at,
        report=report or None,
    )
