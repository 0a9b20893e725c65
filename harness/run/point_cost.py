"""What one point costs in wall time, for ``harness plan``: read from the point's earlier record in the results
directory when that record was made on this runner (same CPU model and CPU count, the machine fields of
``harness.records.fingerprint``), else estimated by a short rule from the model's size and the point's
lengths (``estimate``). Pure apart from reading that one record (and, for a local model, its file sizes).

A cost has three parts, because a plan can change two of them: what a point pays once (task
accuracy), the gate (per gate prompt: the reference and the engine's pass; first launch only), and each launch
(process start, imports, load, warm-up, the timed rounds). What a record's launch made for later runs is not
counted again: the model's conversion (kept in the model cache) and, of its gate time, computing the gate's
reference (``ReferenceInfo.obtained_s``; stored in the reference directory beside the records,
``results/references`` by default, and read by the next run)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.models import prompts, sources
from harness.records.environment import cpu_model
from harness.records.fingerprint import fingerprint
from harness.records.record import Record, recorded_launches
from harness.run import auto_launches
from harness.run.budget import skipped_for_budget
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

# The rule for a point with no record here (``estimate``), stated in the plan's output and docs/nightly-ci.md:
LAUNCH_OVERHEAD_S = 8.0  # process start and the engine's imports, per launch
LOAD_BYTES_PER_S = 500e6  # reading and preparing the weights
DECODE_BYTES_PER_S = 2e9  # a generated token streams every weight once (CPU memory bandwidth)
PREFILL_FLOPS = 20e9  # a prompt token costs 2 x parameters FLOP
PROMPT_TOKENS = 16  # a scenario prompt without prompt_len
UNKNOWN_PARAMETERS = 1e9
_BYTES = {"none": None, "int8_sym": 1.0, "int8_asym": 1.0, "int4_sym": 0.5, "int4_asym": 0.5}
_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([mb])(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True)
class Cost:
    """A point's wall time in parts (seconds). ``source`` says where the figures come from; ``record`` is the
    earlier record they were read from (its launch CV gives the detectable change); ``skips``: that record
    says the point skips on this runner, and why."""

    once_s: float
    gate_prompt_s: float  # per gate prompt, first launch only (0: no gate)
    launch_s: float
    gate_prompts: int  # the scenario's gate prompt count (0: no gate)
    source: str
    record: Optional[Record] = None
    skips: Optional[str] = None

    def seconds(self, launches: int, gate_prompts: Optional[int] = None) -> float:
        """The point's wall with ``launches`` launches and ``gate_prompts`` gate prompts (None: the scenario's)."""
        chosen = self.gate_prompts if gate_prompts is None else min(gate_prompts, self.gate_prompts)
        return self.once_s + chosen * self.gate_prompt_s + launches * self.launch_s


def gate_prompt_count(scenario: Scenario, selection=None) -> int:
    """How many short gate prompts the scenario's gate runs (``selection`` overriding ``gate.prompts``)."""
    if scenario.gate is None:
        return 0
    return len(prompts.select_gate_prompts(scenario.gate.prompts if selection is None else selection))


def same_runner(record: Record) -> bool:
    """The record was made on a machine like this one: the same CPU model and CPU count."""
    mine = {"cpu_model": cpu_model(), "logical_cpus": str(os.cpu_count())}
    theirs = fingerprint(record)
    return all(theirs[name] == value for name, value in mine.items())


def earlier(results_dir: Optional[Path], scenario: Scenario, point: Point) -> Optional[Record]:
    """The point's record in ``results_dir`` when this runner made it, ran it or skipped it (a skip for a spent
    budget says nothing of the point), or None."""
    record = auto_launches.stored(results_dir, scenario, point)
    if (
        record is None
        or record.status not in ("ok", "skipped")
        or skipped_for_budget(record)
        or not same_runner(record)
    ):
        return None
    return record


def cost(results_dir: Optional[Path], scenario: Scenario, point: Point) -> Cost:
    """The point's cost: measured by its record on this runner, else ``estimate``."""
    prompts_now = gate_prompt_count(scenario)
    record = earlier(results_dir, scenario, point)
    if record is None:
        return estimate(scenario, point)
    day = (record.finished_at or record.started_at or "")[:10] or "an unknown day"
    source = f"measured {day} on this runner"
    if record.status == "skipped":
        return Cost(0.0, 0.0, 0.0, prompts_now, source, record, skips=record.reason or "skipped")
    split = record.time_split
    if split is None:  # an older record that kept no time split
        return estimate(scenario, point)
    launches = max(1, len(recorded_launches(record)))
    once = float(split.accuracy_s)  # not the conversion: the model cache holds it now, as the rule assumes
    gate = float(split.gate_s)
    obtained = record.correctness.reference.obtained_s if record.correctness and record.correctness.reference else None
    if obtained:  # computing the reference, paid once: it is stored now, next to this record, and read next time
        gate = max(0.0, gate - obtained)
    # per launch: the rest of the split, less the conversion and the whole gate (its reference included)
    per_launch = (
        sum(float(v) for v in split.model_dump().values()) - split.conversion_s - once - split.gate_s
    ) / launches
    gated = len(record.correctness.prompts) if record.correctness is not None else 0
    per_prompt = gate / gated if gated else (gate / prompts_now if prompts_now else 0.0)
    return Cost(once, per_prompt, max(0.0, per_launch), prompts_now, source, record)


def estimate(scenario: Scenario, point: Point) -> Cost:
    """The rule for a point with no record here: launch overhead, loading the weights, then prefill at
    ``PREFILL_FLOPS`` and decode at ``DECODE_BYTES_PER_S`` over the warm-up and timed rounds; the gate's prompts
    each a reference and an engine pass of ``gate.tokens``. Conversion is not counted (a cache may hold it)."""
    parameters, size_from = model_parameters(scenario.model.source)
    dtype_bytes = _DTYPE_BYTES[scenario.model.dtype]
    weight_bytes = parameters * (_BYTES.get(point.quantization) or dtype_bytes)
    decode_s = weight_bytes / DECODE_BYTES_PER_S
    prefill_s = 2 * parameters / PREFILL_FLOPS
    prompt_tokens = point.prompt_len or PROMPT_TOKENS
    prompts_run = scenario.synthetic_prompts if point.prompt_len else len(scenario.prompts)
    m = scenario.measurement
    rounds = m.warmup_rounds + m.min_rounds
    streams = point.batch_size * point.beam_width
    per_round = prompts_run * (prompt_tokens * prefill_s + scenario.generation.max_new_tokens * decode_s * streams)
    launch = LAUNCH_OVERHEAD_S + weight_bytes / LOAD_BYTES_PER_S + rounds * per_round
    gate_prompts = gate_prompt_count(scenario)
    per_prompt = 0.0
    if scenario.gate is not None:  # the reference at its dtype, then the engine, over the gate's tokens
        reference_decode = parameters * _DTYPE_BYTES.get(scenario.gate.reference_dtype, 2.0) / DECODE_BYTES_PER_S
        per_prompt = scenario.gate.tokens * (reference_decode + decode_s) + 2 * PROMPT_TOKENS * prefill_s
    return Cost(0.0, per_prompt, launch, gate_prompts, f"estimated, no record ({size_from})")


def model_parameters(source: str) -> tuple[float, str]:
    """The model's parameter count for ``estimate``, and where it came from: a size in its name (270m,
    0.5B), a built-in tiny model, a local checkpoint's weight files (at 2 bytes a weight) or a GGUF's size
    (at 1 byte a weight), else ``UNKNOWN_PARAMETERS``."""
    name = Path(source).name
    if source.startswith(sources.TINY_PREFIX):
        return 1e6, "tiny model"
    found = _SIZE.search(name)
    if found:
        number, unit = found.groups()
        parameters = float(number) * (1e6 if unit.lower() == "m" else 1e9)
        return parameters, f"{_count(parameters)} parameters, from the model's name"
    path = Path(source).expanduser()
    if path.is_file():
        return path.stat().st_size, f"{_count(path.stat().st_size)} parameters at a byte each, from the GGUF's size"
    if path.is_dir():
        weights = sum(f.stat().st_size for f in path.iterdir() if f.suffix in (".safetensors", ".bin"))
        if weights:
            return weights / 2, f"{_count(weights / 2)} parameters at 2 bytes each, from the weight files"
    return UNKNOWN_PARAMETERS, f"model size unknown: {_count(UNKNOWN_PARAMETERS)} parameters assumed"


def _count(parameters: float) -> str:
    return f"{parameters / 1e9:.1f}B" if parameters >= 1e9 else f"{parameters / 1e6:.0f}M"
