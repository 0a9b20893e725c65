"""The dequantized check: a quantized point's artefact read back tensor by tensor against the HF checkpoint.

The same-weights twin (``harness.correctness.same_weights``) runs the point's own artefact on a trusted
path of its engine, so it shares every fault written into that artefact: a converter that swaps two
rows, patches a scale or writes another layer's tensor makes a GGUF or an IR whose device path and twin
agree, and against HF the damage hides in the quantization drift a quantized point is allowed. This
check does not run the engine: the artefact's reader (``Twin.read_weights``: gguf-py for a GGUF, the
IR's compressed constants with their scales and zero points for OpenVINO) dequantizes every weight and
maps it back to its HF name, undoing the converter's layout (Q/K permutation, Gemma's norm shift,
stacked experts), and each row is set beside the same row of the HF checkpoint.

Per row the relative error ``|dequantized - hf| / |hf|`` is the quantization's cost for that row. A
format's noise floor is the median row error over every row stored in that format (Q8_0, Q4_0, ...;
at least ``MIN_FLOOR``, the rounding of an f16 copy), and the point's ratio is the worst row's error over
its format's floor. Clean quantization spreads errors evenly (ratio a few), a wrong row or tensor is as
far from HF as the weights are large (ratio tens to thousands): above ``FAIL_FACTOR`` the point fails.
A format whose every row is wrong raises its own floor; a tensor of a format no other tensor shares is
judged against ``MIN_FLOOR`` and so fails unless it is near-lossless.

That size test is blind to a systematic shift smaller than rounding noise (a zero point off by one step, a
layer's scales a few per cent off); the bias test (``harness.correctness.weight_bias``) looks for the
error's sign per block, row and tensor, and fails the check on its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from harness.correctness import weight_bias

if TYPE_CHECKING:
    from harness.models.stored_weights import Tensor
    from harness.records.dequantized_audit import DequantizedAudit
    from harness.records.weight_bias import WeightBias

FAIL_FACTOR = 5.0  # worst row error over its format's median; measured clean: Q8_0 1.9x, Q4_0 2.1x (tiny-llama)
MIN_FLOOR = 1e-3  # relative row error of an f16 copy is ~3e-4; exact F32 copies would give a floor of 0
METHOD = "per-row relative error |dequantized artefact - HF| / |HF|, over its storage format's median row error"


@dataclass
class WeightAudit:
    """Result of ``audit``: ``ratio`` is the worst row's error over its format's floor."""

    verdict: str  # pass | fail
    ratio: float
    fail_factor: float
    worst: str  # "<hf name> row <i> (<format>)"
    worst_error: float
    floors: dict[str, float]  # per storage format: median relative row error (at least MIN_FLOOR)
    tensors: int
    method: str = METHOD
    reasons: list[str] = field(default_factory=list)
    bias: Optional[WeightBias] = None  # the sign test; None where every tensor is an exact copy


def row_errors(dequantized: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Relative L2 error per row (the last axis, along which the quantization blocks run)."""
    width = reference.shape[-1] if reference.ndim else 1
    got, want = dequantized.reshape(-1, width), reference.reshape(-1, width)
    norms = np.linalg.norm(want, axis=1)
    scale = np.where(norms > 0, norms, max(float(np.max(norms)), 1e-12))
    return np.asarray(np.linalg.norm(got - want, axis=1) / scale)


def audit(reference: dict[str, np.ndarray], stored: dict[str, Tensor], fail_factor: float = FAIL_FACTOR) -> WeightAudit:
    """Every tensor of ``stored`` (read back from an artefact) against the same HF tensor in ``reference``."""
    errors: dict[str, np.ndarray] = {}
    for name, tensor in stored.items():
        if tensor.values.shape != reference[name].shape:
            raise ValueError(f"{name}: artefact shape {tensor.values.shape} != HF shape {reference[name].shape}")
        errors[name] = row_errors(tensor.values, reference[name])
    by_type: dict[str, list[np.ndarray]] = {}
    for name, tensor in stored.items():
        by_type.setdefault(tensor.stored_type, []).append(errors[name])
    floors = {kind: max(float(np.median(np.concatenate(rows))), MIN_FLOOR) for kind, rows in by_type.items()}
    worst_name = max(errors, key=lambda n: float(errors[n].max()) / floors[stored[n].stored_type])
    row = int(np.argmax(errors[worst_name]))
    kind = stored[worst_name].stored_type
    worst_error = float(errors[worst_name][row])
    ratio = worst_error / floors[kind]
    where = f"{worst_name} row {row} ({kind}, stored as {stored[worst_name].stored_name})"
    failed = ratio > fail_factor
    reasons = (
        [
            f"dequantized artefact (size): {where} is {worst_error:.3g} from HF, {ratio:.1f}x its format's median row "
            f"error {floors[kind]:.3g} (fail line {fail_factor:g}x): the artefact holds other weights than the "
            "checkpoint, a converter bug rather than quantization"
        ]
        if failed
        else []
    )
    bias = weight_bias.judge(reference, stored)
    if bias is not None and bias.verdict == "fail":
        reasons.append(weight_bias.reason(bias))
    return WeightAudit(
        verdict="fail" if reasons else "pass",
        ratio=ratio,
        fail_factor=fail_factor,
        worst=where,
        worst_error=worst_error,
        floors=floors,
        tensors=len(stored),
        reasons=reasons,
        bias=bias,
    )


def audit_artefact(hf_dir: Path, read_weights: Callable[[dict[str, tuple[int, ...]], dict], dict[str, Tensor]]):
    """``audit`` of an artefact (``read_weights``: a ``Twin.read_weights``) against the checkpoint in ``hf_dir``."""
    from harness.models.stored_weights import hf_config, hf_weights

    reference = hf_weights(hf_dir)
    stored = read_weights({name: array.shape for name, array in reference.items()}, hf_config(hf_dir))
    return audit(reference, stored)


def _audit(hf_dir: Path, twin) -> DequantizedAudit:
    from harness.models.stored_weights import UnsupportedLayout
    from harness.records.dequantized_audit import DequantizedAudit

    try:
        found = audit_artefact(hf_dir, twin.read_weights)
    except UnsupportedLayout as exc:
        return DequantizedAudit(skipped=str(exc))
    except (KeyError, ValueError) as exc:  # a tensor missing from the artefact, or of another shape
        return DequantizedAudit(verdict="fail", reasons=[f"dequantized artefact: {exc}"], method=METHOD)
    return DequantizedAudit(**asdict(found))


def path_for(root: Path, model, twin) -> Path:
    """Where the audit of ``twin``'s artefact against ``model``'s checkpoint is stored: keyed by both
    contents (the twin's key is the artefact's sha256), the method and the fail line."""
    import hashlib
    import json

    from harness.io import safe_name

    identity = json.dumps(
        {
            "artefact": twin.key,
            "checkpoint": model.checksum,
            "method": METHOD,
            "fail": FAIL_FACTOR,
            "bias": weight_bias.METHOD,
        },
        sort_keys=True,
    )
    return (
        Path(root)
        / safe_name(model.name)
        / "dequantized"
        / f"{hashlib.sha256(identity.encode()).hexdigest()[:16]}.json"
    )


def check(root: Path, model, twin, refresh: bool = False) -> Optional[DequantizedAudit]:
    """The record's ``DequantizedAudit`` for a point whose twin (``Adapter.trusted_twin``) runs ``twin.weights``
    against ``model``'s HF checkpoint; None where the twin has no weights reader. Computed once per pair
    of contents and stored beside the references (reading back Gemma's 262k-row embedding takes minutes
    on two busy cores)."""
    from harness.io import compute_once, read_json, sealed, write_json_atomic
    from harness.records.dequantized_audit import DequantizedAudit

    if twin.read_weights is None:
        return None

    def read(path: Path) -> Optional[DequantizedAudit]:  # sealed like the references: an edit is refused
        if not path.exists():
            return None
        return DequantizedAudit.model_validate(sealed.check(path, read_json(path), "stored dequantized audit"))

    found, _ = compute_once(
        path_for(root, model, twin),
        read,
        lambda: _audit(model.hf_dir, twin),
        lambda p, audit: write_json_atomic(p, sealed.seal(audit.model_dump(mode="json")), indent=None),
        refresh=refresh,
    )
    return found
