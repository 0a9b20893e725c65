"""The flat columns of the gate's token classes, flip rate and top-k tie margin (``flatten``: the report's
``points.csv``, pytest-benchmark's ``extra_info``): one name per figure, None where the record has none."""

from __future__ import annotations

from harness.records.correctness import Correctness


def class_column(name: str, figure: str) -> str:
    """``gate_class_<class>_<figure>``: the class name with ``-`` as ``_`` (``word-start`` -> ``word_start``)."""
    return f"gate_class_{name.replace('-', '_')}_{figure}"


def gate_class_columns(gate: Correctness) -> dict:
    """``gate_flip_rate`` (its ``gate_flips``, ``gate_flip_decided``, ``gate_flip_verdict``, ``gate_flip_expected``: the
    rate expected at the floor), per token class present
    ``gate_class_<class>_kl_ratio`` and ``_top1`` (top-1 agreement), ``gate_tie_margin`` and ``gate_topk_ties``."""
    check = gate.classes if gate.classes is not None and gate.classes.skipped is None else None
    flips = check.flips if check is not None else None
    out = {
        "gate_flip_rate": flips.rate if flips else None,
        "gate_flips": flips.flips if flips else None,
        "gate_flip_decided": flips.decided if flips else None,
        "gate_flip_verdict": flips.verdict if flips else None,
        "gate_flip_expected": flips.expected_rate if flips else None,
        "gate_tie_margin": gate.tie_margin,
        "gate_topk_ties": sum(p.topk_ties for p in gate.prompts) if gate.tie_margin is not None else None,
    }
    for stat in check.classes if check is not None else []:
        out[class_column(stat.name, "kl_ratio")] = stat.kl_ratio
        out[class_column(stat.name, "top1")] = stat.top1_agreement
    return out
