"""Diagnosis of a failed gate: which component of the device's forward first departs from HF's.

The device's and HF's activations over the same tokens are compared component by component in forward
order: the embedding output, every decoder layer's output, the final norm's output and the logits.
Precision errors grow smoothly from one component to the next; a fault makes the error jump. The
first component whose relative error reaches ``min_error`` and ``jump`` times the largest error before
it is named (``"embedding"``, ``"decoder layer N"``, ``"final norm"``, ``"logits"``). Cosine alone hides
faults: residual streams with large outlier dimensions keep it above 0.999 through a swapped pair of
attention heads, so the relative error decides.

The device's states are taken on the path the gate ran, where the adapter can (``supports_path_hidden_states``:
the point's static or dynamic cache, its prefill chunks, any padding its prefill adds), so a fault that lives
only on that path (a chunked prefill's positions, a padded prefill) departs there; the record says which path
(``path``), in which chunk the departing component first departs (``chunk`` of ``chunks``) and how many
positions a padded prefill ran (``ran``). An engine that cannot takes one forward without cache, and the
record's ``path`` says so. Where the gate failed decides where to look: always first the prompt's own prefill,
as the gate ran it; a failure at the first generated position (the prefill's logits) stops there; a later one
goes on to the prefill of the whole teacher-forced sequence, then, when nothing departs there (a fault that
touches only decode steps), to the first decode step with the prompt in the cache. When neither can run, the
diagnosis says why (``not_run``).
Before any layer is blamed, the ids the engine's own tokenizer gives the failing prompt are compared with
the reference's (``input_ids``): the layers only ever see the reference's ids, so a fault on the input
path (a tokenizer, a chat template) would otherwise be reported as "nothing departs". Where they differ the
diagnosis names ``"input ids"``. Informational: it never changes a verdict. The result is the record's
``Diagnosis`` part (``harness.records.gate_diagnosis``).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from harness.correctness.stored_reference import Reference
from harness.models.prompts import COPY
from harness.records.correctness import Correctness
from harness.records.gate_diagnosis import Component, Diagnosis, InputIds


def compare_input_ids(engine_ids: Optional[Callable[[int], list[int]]], reference: Reference, index: int) -> InputIds:
    """``engine_ids(i)``: the ids the engine's own text path gives gate prompt i (None: it has none)."""
    if engine_ids is None:
        return InputIds(prompt=index, not_compared="the engine exposes no tokenizer of its own: it was fed these ids")
    ref = reference.prompts[index]
    # a copy prompt's text is its prompt ids and its teacher-forced tokens together
    ours, theirs = list(engine_ids(index)), list(ref.prompt_ids) + (list(ref.tokens) if ref.kind == COPY else [])
    if ours == theirs:
        return InputIds(prompt=index, agree=True)
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return InputIds(prompt=index, agree=False, first_difference=at, engine=ours, reference=theirs)


def _named(states) -> list[tuple[str, np.ndarray]]:
    """(name, array) in forward order from an ``Activations`` or the protocol's plain list."""
    names = [("embedding", states[0])] + [(f"decoder layer {i}", s) for i, s in enumerate(states[1:])]
    for name, attribute in (("final norm", "final_norm"), ("logits", "logits")):
        if getattr(states, attribute, None) is not None:
            names.append((name, getattr(states, attribute)))
    return names


def compare(ours, theirs, min_error: float = 2e-2, jump: float = 4.0) -> Diagnosis:
    """Pure: per-component agreement of two activation sets and the first component that departs.

    ``min_error`` sits above precision noise at a single decode position (Gemma 3 270M, fp32 device
    against bf16 HF: 0.012 at layer 0, 0.005 at most over a prefill; a decode step at the wrong
    position: 0.027 at layer 0)."""
    a_named, b_named = _named(ours), _named(theirs)
    shared = min(len(a_named), len(b_named))  # a plain list lacks the final norm and logits: compare the rest
    if [n for n, _ in a_named[:shared]] != [n for n, _ in b_named[:shared]] or shared < 2:
        return Diagnosis(
            not_run=f"device exposes {len(a_named)} components ({a_named[-1][0]} last), "
            f"HF {len(b_named)} ({b_named[-1][0]} last)"
        )
    components: list = []
    departs, worst = None, 0.0
    for (name, a), (_, b) in zip(a_named[:shared], b_named[:shared]):
        if a.shape != b.shape:
            return Diagnosis(components=components, not_run=f"{name}: device shape {a.shape}, HF {b.shape}")
        a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        error = _relative(a, b)
        cosine = float(a64 @ b64 / (np.linalg.norm(a64) * (np.linalg.norm(b64) + 1e-30)))
        components.append(
            Component(name=name, cosine=cosine, relative_error=error, max_abs=float(np.max(np.abs(a64 - b64))))
        )
        if departs is None and error >= min_error and error >= jump * worst:
            departs = name
        worst = max(worst, error)
    found = Diagnosis(components=components, departs_at=departs)
    _locate_chunk(found, ours, a_named, b_named, min_error)
    return found


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(np.linalg.norm(a64 - b64) / (np.linalg.norm(b64) + 1e-30))


def _locate_chunk(found: Diagnosis, ours, a_named, b_named, min_error: float) -> None:
    """The prefill's chunk where the departing component first departs, from the rows each forward held
    (``Activations.forwards``); the logits are the last position's, so the last chunk's."""
    forwards = [n for n in (getattr(ours, "forwards", None) or []) if n > 0]
    if len(forwards) < 2:
        return
    found.chunks = len(forwards)
    if found.departs_at is None:
        return
    a, b = dict(a_named)[found.departs_at], dict(b_named)[found.departs_at]
    if len(a) != sum(forwards):  # the logits (last row only)
        found.chunk = len(forwards)
        return
    ends = np.cumsum(forwards)
    for index, (end, rows) in enumerate(zip(ends, forwards)):
        if _relative(a[end - rows : end], b[end - rows : end]) >= min_error:
            found.chunk = index + 1
            return


ONE_FORWARD = "one forward without cache (the engine's states do not follow the timed path)"


def diagnose(device, reference_engine, tokens: Sequence[int], decode: bool = False, **thresholds) -> Diagnosis:
    """Compare ``device`` with ``reference_engine`` (both adapters exposing hidden states) over one
    forward of ``tokens``, or, with ``decode``, over the decode step that feeds ``tokens[-1]``."""
    if decode:
        ours, theirs = device.hidden_states(tokens, decode=True), reference_engine.hidden_states(tokens, decode=True)
    else:
        ours, theirs = device.hidden_states(tokens), reference_engine.hidden_states(tokens)
    result = compare(ours, theirs, **thresholds)
    result.phase = "decode" if decode else "prefill"
    on_path = device.supports_path_hidden_states or decode  # a decode step runs on the step-wise path
    result.path = getattr(ours, "path", None) if on_path else ONE_FORWARD
    result.ran = getattr(ours, "ran", None)
    return result


def first_failure(result: Correctness) -> tuple[int, Optional[int]]:
    """(prompt, generated position) where the gate's top-k checks first failed: the earliest position
    over prompts, from the free-running divergence and the first teacher-forced violation. Position
    None when only the KL tier failed (it says no position); the prompt is then the one of highest KL."""
    earliest: Optional[tuple[int, int]] = None
    for prompt in result.prompts:
        positions = [
            p
            for p in (prompt.forced_first_violation, prompt.free_divergence if prompt.free_ok is False else None)
            if p is not None
        ]
        if positions and (earliest is None or min(positions) < earliest[0]):
            earliest = (min(positions), prompt.prompt)
    if earliest is not None:
        return earliest[1], earliest[0]
    kl = [(p.kl_mean, p.prompt) for p in result.prompts if p.kl_mean is not None]
    return (max(kl)[1] if kl else 0), None


def diagnose_failure(
    device, reference_engine, reference: Reference, result: Correctness, engine_ids=None, **thresholds
) -> Diagnosis:
    """Localise a failed gate's fault: the input ids first (``engine_ids``, see ``compare_input_ids``), then
    the prompt's prefill, then (when the gate did not fail at the prefill's own position and nothing departs
    there) the teacher-forced sequence's prefill and the first decode step; or say why it could not."""
    index, position = first_failure(result)
    ids = compare_input_ids(engine_ids, reference, index)
    if ids.agree is False:
        return Diagnosis(prompt=index, position=position, departs_at="input ids", input_ids=ids)
    if not device.supports_hidden_states:
        return Diagnosis(not_run=f"{device.name} exposes no hidden states", input_ids=ids)
    ref = reference.prompts[index]
    found = diagnose(device, reference_engine, ref.prompt_ids, **thresholds)  # the prefill the gate ran
    found.prompt, found.position, found.input_ids = index, position, ids
    if found.departs_at is not None or position == 0 or found.not_run:
        return found
    # the positions the decode steps read, in one prefill of the teacher-forced sequence
    found = diagnose(device, reference_engine, ref.prompt_ids + ref.tokens[:-1], **thresholds)
    found.prompt, found.position, found.input_ids = index, position, ids
    if found.departs_at is not None or found.not_run:
        return found
    where = f"at generated position {position}" if position is not None else "on the KL tier only"
    if not device.supports_decode_hidden_states:
        found.not_run = (
            f"the gate failed {where} of prompt {index}, the prefill's activations agree with "
            f"HF, and {device.name} cannot expose a decode step's hidden states"
        )
        return found
    step = diagnose(device, reference_engine, ref.prompt_ids + ref.tokens[:1], decode=True, **thresholds)
    step.prompt, step.position, step.input_ids = index, position, ids
    return step
