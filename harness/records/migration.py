"""Reading records written by older versions of the harness: ``migrate`` upgrades a record's JSON to the
current schema as it loads (version 1's ``details`` grab-bag split into named parts; version 2's flat
``adapter`` dict typed as the ``engine`` part; point ids that named the model's dtype renamed to the precision
that ran; the gate's diagnosis without the layer number its ``departs_at`` already names), so older results
and baselines keep matching new runs."""

from __future__ import annotations

from typing import Optional

from harness.records import precision
from harness.records.engine import from_legacy

SCHEMA_VERSION = 3


V1_FIELDS = {
    "scenario",
    "point_id",
    "point",
    "status",
    "reason",
    "settings",
    "model",
    "metrics",
    "units",
    "samples",
    "correctness",
    "accuracy",
    "adapter",
    "environment",
    "scenario_path",
    "started_at",
    "finished_at",
    "schema_version",
}
V1_UNAVAILABLE = {"cpu_cycles_unavailable": "cpu_cycles", "device_memory_unavailable": "device_memory_peak_mb"}


def migrate(data: dict) -> dict:
    """Upgrade an older record's JSON to the current schema."""
    version = data.get("schema_version")
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(f"unsupported record schema_version {version!r} (this harness reads 1 to {SCHEMA_VERSION})")
    if version == 1:
        data = _from_v1(data)
    if data["schema_version"] == 2:
        data = _engine_part(data)
    return _precision_in_id(_derived_diagnosis(data))


def _derived_diagnosis(data: dict) -> dict:
    """Records written before the gate's diagnosis was a typed part stored ``departs_at_layer``, the number of
    the decoder layer ``departs_at`` names ("decoder layer N"), which says it already. Idempotent."""
    correctness = data.get("correctness")
    if not isinstance(correctness, dict):
        return data
    diagnosis = correctness.get("diagnosis")
    if not isinstance(diagnosis, dict) or "departs_at_layer" not in diagnosis:
        return data
    kept = {k: v for k, v in diagnosis.items() if k != "departs_at_layer"}
    return {**data, "correctness": {**correctness, "diagnosis": kept}}


def _engine_part(data: dict) -> dict:
    """Version 2 kept the adapter's description as a flat dict under ``adapter`` (``threads`` or ``n_threads``
    by engine); version 3 types it as ``engine`` (``harness.records.engine.EngineInfo``)."""
    data = dict(data)
    adapter = data.pop("adapter", None)
    return {**data, "schema_version": 3, "engine": from_legacy(adapter) if isinstance(adapter, dict) else {}}


def _precision_in_id(data: dict) -> dict:
    """Point ids name the precision a point ran at, where records written before said the model's dtype: a
    llama.cpp point at quantization ``none`` runs its GGUF's own file type (``llamacpp-cpu-bf16`` ->
    ``llamacpp-cpu-q4_k_m``), an OpenVINO CPU point computes in the CPU plugin's inference precision
    (``openvino-CPU-bf16`` -> ``openvino-CPU-f32`` on a CPU without bf16). Such a record gets the new id as it
    loads (``_ran`` reads what ran from its engine part), so older results and baselines keep matching the
    points of a new run. Idempotent."""
    # any part may have the wrong shape here: the schema's validation, after this, names it
    engine, point = _part(data, "engine"), _part(data, "point")
    pid, ran = data.get("point_id"), _ran(_part(engine, "extra"), point)
    if ran is None or not isinstance(pid, str) or point.get("quantization", "none") != "none":
        return data
    dtype = _part(_part(data, "settings"), "model").get("dtype") or "bf16"
    renamed = precision.id_with_precision(pid, str(point.get("adapter")), str(point.get("device")), dtype, ran)
    return data if renamed == pid else {**data, "point_id": renamed}


def _part(data: dict, key: str) -> dict:
    """``data[key]`` where it is an object, else empty."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _ran(extra: dict, point: dict) -> Optional[str]:
    """What a record's engine part says its point ran at: a GGUF's ``file_type``; the CPU plugin's
    ``precision_hints`` (read from the CPU plugin, so they say what ran on the CPU device only)."""
    file_type = extra.get("file_type")
    if isinstance(file_type, str):
        return precision.from_gguf_file_type(file_type)
    hints = extra.get("precision_hints")
    if isinstance(hints, dict) and point.get("device") == "CPU":
        return precision.from_openvino_type(hints.get("INFERENCE_PRECISION_HINT"))
    return None


def _from_v1(data: dict) -> dict:
    """Version 1 kept generated text, tracebacks, routing and notes in one ``details`` dict."""
    details = dict(data.pop("details", None) or {})
    unavailable = {}
    for source, why in (details.pop("energy_unavailable", None) or {}).items():
        unavailable["energy_j" if source == "npu" else f"energy_{source}_j"] = why
    for key, metric in V1_UNAVAILABLE.items():
        if details.get(key):
            unavailable[metric] = details.pop(key)
    note = details.pop("roofline_note", None)
    if note:
        names = ("decode_bound_ms", "roofline_fraction") if "weight size" in note else ("prefill_compute_bound_ms",)
        unavailable.update(dict.fromkeys(names, note))
    failure = {k: details.pop(k) for k in ("traceback", "output_tail", "exit_code") if k in details}
    if isinstance(failure.get("exit_code"), int) and failure["exit_code"] < 0:
        failure["signal"] = _signal_name(-failure["exit_code"])
    samples = data.get("samples") or {}
    data = {k: v for k, v in data.items() if k in V1_FIELDS}  # version 1 passed unknown keys over
    return {
        **data,
        "schema_version": 2,
        "samples": samples,
        "outputs": details.pop("outputs", {}),
        "prompt_lengths": details.pop("prompt_lengths", []),
        "routing": details.pop("routing", None),
        "log": details.pop("log", []),
        "failure": failure or None,
        "unavailable": unavailable,
    }


def _signal_name(number: int) -> Optional[str]:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return None
