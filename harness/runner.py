"""Run sweep points: check, load, measure, record. An exception in one point never stops the sweep."""

from __future__ import annotations

import contextlib
import json
import resource
import statistics
import sys
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from harness import environment, measure, models, prompts, registry, results
from harness.adapter import LoadSettings, PointSkipped, now_ns
from harness.errors import HarnessError
from harness.isolation import Limits, run_in_child
from harness.scenario import Scenario
from harness.sweep import Point, expand


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


@dataclass
class Runner:
    """Runs points and writes their records. Holds resolved models so a sweep converts each once.

    ``timing=False`` runs only the correctness gate (``harness verify``); ``gate_prompts`` overrides
    the scenarios' gate prompt selection; references live in ``reference_dir`` (default
    ``<results_dir>/references``).
    """

    results_dir: Optional[Path] = Path("results")
    cache_dir: Optional[Path] = None
    reference_dir: Optional[Path] = None
    timing: bool = True
    gate_prompts: Union[str, int, None] = None
    refresh_reference: bool = False
    log: Callable[[str], None] = field(default=lambda message: None)
    isolate: bool = False  # run each point in a child process (see harness.isolation)
    allow_remote_code: bool = False  # the command line's confirmation of model.trust_remote_code
    energy: bool = True  # energy (Zeus), CPU time and the roofline around the timed rounds
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self):
        self._models: dict[str, models.ResolvedModel] = {}
        self._references: dict[Path, object] = {}
        self._environment: Optional[dict] = None
        self._meter = None

    def _resolve(self, scenario: Scenario) -> models.ResolvedModel:
        key = scenario.model.model_dump_json()
        if key not in self._models:
            self._models[key] = models.resolve(scenario.model, self.cache_dir)
            return self._models[key]  # only the first point pays (and reports) conversion
        cached = self._models[key]
        return models.ResolvedModel(**{**cached.__dict__, "convert_s": 0.0})

    def run_point(self, scenario: Scenario, point: Point, on_round: Optional[Callable[[int], None]] = None) -> results.Record:
        if self._environment is None:
            self._environment = environment.collect()
        if self.isolate:
            return self._run_isolated(scenario, point)
        record = self._new_record(scenario, point)
        try:
            self._run(scenario, point, record, on_round)
        except (_Skip, PointSkipped) as skip:
            record.status, record.reason = "skipped", str(skip)
        except Exception as exc:  # noqa: BLE001 - any engine failure becomes a failed record
            record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}".strip()
            if not isinstance(exc, HarnessError):
                record.details["traceback"] = traceback.format_exc(limit=-8)
        record.finished_at = _now()
        if self.results_dir is not None:
            results.write(record, self.results_dir)
        return record

    def _run_isolated(self, scenario: Scenario, point: Point) -> results.Record:
        started = _now()
        reason = None
        try:
            reason = registry.get(point.adapter).supports(point)  # cheap: skip without a child
        except HarnessError as exc:
            reason = str(exc)
        if reason:
            record = self._new_record(scenario, point)
            record.status, record.reason = "skipped", reason
        else:
            record = run_in_child(self, scenario, point, self.limits)
            record.settings = record.settings or self._settings(scenario)
            record.environment = record.environment or self._environment
            record.started_at = record.started_at or started
        record.finished_at = record.finished_at or _now()
        if self.results_dir is not None:
            results.write(record, self.results_dir)
        return record

    @staticmethod
    def _settings(scenario: Scenario) -> dict:
        return scenario.model_dump(include={"model", "generation", "measurement", "prompts", "synthetic_prompts",
                                            "quantization_options", "adapter_options", "gate", "accuracy"})

    def _new_record(self, scenario: Scenario, point: Point) -> results.Record:
        return results.Record(
            scenario=scenario.name,
            point_id=point.id,
            point=point.axes(),
            status="ok",
            settings=self._settings(scenario),
            environment=self._environment,
            scenario_path=scenario.path,
            started_at=_now(),
        )

    def _run(self, scenario: Scenario, point: Point, record: results.Record, on_round) -> None:
        adapter_cls = registry.get(point.adapter)
        reason = adapter_cls.supports(point)
        if reason:
            raise _Skip(reason)
        if not self.timing and scenario.gate is None:
            raise _Skip("the scenario has no gate section")
        model = self._resolve(scenario)
        record.model = {"name": model.name, "checksum": model.checksum, "hf_dir": str(model.hf_dir),
                        "gguf": str(model.gguf_path) if model.gguf_path else None}
        tokenizer = model.tokenizer()
        if point.prompt_len is not None:
            prompt_ids = prompts.synthetic(tokenizer, point.prompt_len, scenario.synthetic_prompts)
        else:
            prompt_ids = prompts.encode_texts(tokenizer, scenario.prompts)
        max_new = scenario.generation.max_new_tokens
        longest = max(len(p) for p in prompt_ids)
        if point.max_seq_len is not None and longest + max_new > point.max_seq_len:
            raise _Skip(f"prompt ({longest} tokens) + max_new_tokens ({max_new}) exceeds max_seq_len {point.max_seq_len}")
        reference = self._reference(scenario, model) if scenario.gate else None  # before the device loads
        accuracy_reference = self._accuracy_reference(scenario, model)  # likewise

        adapter = adapter_cls()
        settings = LoadSettings(dtype=scenario.model.dtype, threads=scenario.measurement.threads,
                                max_new_tokens=max_new, cache_dir=str(self.cache_dir) if self.cache_dir else None,
                                quantization=scenario.quantization_options.model_dump(),
                                options=dict(scenario.adapter_options.get(point.adapter, {})),
                                trust_remote_code=scenario.model.trust_remote_code and self.allow_remote_code)
        start = now_ns()
        adapter.load(model, point, settings)
        load_s = (now_ns() - start) / 1e9
        record.metrics.update(adapter.load_figures())
        try:
            if self.timing:
                self._time(scenario, point, adapter, prompt_ids, tokenizer, record, on_round)
            if reference is not None:
                self._gate(scenario, point, adapter, reference, tokenizer, record)
            if scenario.accuracy is not None and self.timing:  # `harness verify` runs the gate alone
                self._accuracy(scenario, model, adapter, tokenizer, accuracy_reference, record)
            routing = adapter.routing(prompt_ids)
            if routing:  # MoE: what the router did with these prompts, for the report's load plots
                record.details["routing"] = routing
                record.metrics.update(moe_drop_rate=routing["drop_rate"], moe_imbalance_max=max(routing["imbalance"]))
            record.adapter = adapter.describe()
        finally:
            adapter.close()
        record.metrics.update({"peak_rss_mb": _peak_rss_mb(), "convert_s": model.convert_s, "load_s": load_s})
        record.units = {k: measure.UNITS[k] for k in record.metrics if k in measure.UNITS}

    def _time(self, scenario, point, adapter, prompt_ids, tokenizer, record, on_round) -> None:
        max_new = scenario.generation.max_new_tokens
        outputs: dict[int, list[int]] = {}
        engine_figures: list[dict] = []

        def generate(index: int):
            trace = adapter.generate([prompt_ids[index]] * point.batch_size, max_new)
            if trace.output_ids:
                outputs[index] = trace.output_ids[0]
            engine_figures.append(trace.engine_metrics)
            return trace

        m = scenario.measurement
        stopping = measure.Stopping(m.warmup_rounds, m.min_rounds, m.min_time_s, m.max_rounds)
        windows: dict = {}
        meter = self._energy_meter() if self.energy else None

        @contextlib.contextmanager
        def energy_window():
            if meter is None:
                yield
                return
            from harness.energy import CycleCounter

            cycles = CycleCounter()
            cycles.begin()
            meter.begin("generation")
            try:
                yield
            finally:  # closed even when a round fails, so the next point can open its own
                windows["generation"] = meter.end("generation")
                windows["cycles"] = (cycles.end(), cycles.reason)

        warmups, rounds = measure.run_rounds(generate, len(prompt_ids), stopping, max_new, on_round, energy_window)
        record.metrics.update(measure.summarize(rounds))
        if meter is not None:
            self._energy_metrics(point, adapter, prompt_ids, rounds, meter, windows["generation"],
                                 windows["cycles"], record)
        record.metrics.update(measure.summarize_engine(engine_figures[len(warmups):]))
        record.metrics["first_call_s"] = warmups[0] if warmups else None
        record.samples = {"rounds": [r.to_dict() for r in rounds], "warmup_s": warmups}
        record.details["outputs"] = {str(i): tokenizer.decode(ids) for i, ids in sorted(outputs.items())}
        record.details["prompt_lengths"] = [len(p) for p in prompt_ids]

    def _energy_meter(self):
        from harness.energy import EnergyMeter

        if self._meter is None:
            self._meter = EnergyMeter()
        return self._meter

    def _energy_metrics(self, point, adapter, prompt_ids, rounds, meter, window, windows_cycles, record) -> None:
        """Energy, CPU time and the decode roofline; a prefill-only window when energy is measurable."""
        from harness import energy, roofline

        prefill = None
        if meter.measures_anything:
            meter.begin("prefill")
            for r in rounds:  # one-token generations: prefill and the first token only
                adapter.generate([prompt_ids[r.prompt_index]] * point.batch_size, 1)
            prefill = meter.end("prefill")
        generated = sum(r.batch_size * r.n_generated for r in rounds)
        prompt_tokens = sum(r.batch_size * r.prompt_tokens for r in rounds)
        record.metrics.update(energy.metrics(window, generated, prefill, prompt_tokens))
        record.metrics["cpu_cycles"], cycles_reason = windows_cycles
        if cycles_reason:
            record.details["cpu_cycles_unavailable"] = cycles_reason
        record.metrics["device_memory_peak_mb"], memory_reason = adapter.device_memory()
        if memory_reason:
            record.details["device_memory_unavailable"] = memory_reason
        unavailable = dict(meter.unavailable)
        if "npu" in point.device.lower():
            unavailable["npu"] = energy.NPU_NOTE
        record.details["energy_unavailable"] = unavailable
        config = json.loads((Path(record.model["hf_dir"]) / "config.json").read_text())
        context = statistics.median(r.prompt_tokens + r.n_generated / 2 for r in rounds)
        bandwidth = roofline.bandwidth(models.cache_dir(self.cache_dir))["bytes_per_s"]
        bound = roofline.decode_bound(adapter.weight_bytes(), config, context, bandwidth, record.metrics.get("tpot_ms"))
        record.details["roofline_note"] = bound.pop("roofline_note")
        record.metrics.update(bound)

    def _reference(self, scenario: Scenario, model):
        from harness.reference import ReferenceSettings, ReferenceStore

        spec = scenario.gate
        selection = self.gate_prompts if self.gate_prompts is not None else spec.prompts
        pairs = prompts.select_gate_prompts(selection)
        settings = ReferenceSettings(tokens=spec.tokens, top_m=max(64, spec.k), dtype=spec.reference_dtype,
                                     threads=scenario.measurement.threads)
        store = ReferenceStore(self.reference_dir or Path("results") / results.REFERENCE_DIR)
        path = store.path_for(model.name, pairs, settings)
        if path not in self._references:
            reference, path, reused = store.get_or_compute(model, pairs, settings, refresh=self.refresh_reference)
            if reused:
                self.log(f"reference: reused {path}")
            else:
                self.log(f"reference: computed in {reference.compute_s:.1f} s, stored at {path}")
            self._references[path] = reference
        return self._references[path]

    def _accuracy_reference(self, scenario: Scenario, model) -> Optional[dict]:
        spec = scenario.accuracy
        if spec is None or not spec.reference or not self.timing:
            return None
        from harness import accuracy

        if accuracy.unavailable():
            return None

        dtype = scenario.gate.reference_dtype if scenario.gate else "bf16"
        store = self.reference_dir or Path("results") / results.REFERENCE_DIR
        return accuracy.reference(model, spec.tasks, spec.limit, spec.num_fewshot, dtype,
                                  scenario.measurement.threads, store, log=self.log)

    def _accuracy(self, scenario: Scenario, model, adapter, tokenizer, reference, record) -> None:
        from harness import accuracy
        from harness.reference import eos_ids

        spec = scenario.accuracy
        reason = accuracy.unavailable()
        if reason:  # timing and the gate still stand; the record says why accuracy is missing
            record.accuracy = {"skipped": reason}
            return
        from harness.lm_eval_model import HarnessLM

        start = now_ns()
        lm = HarnessLM.from_adapter(adapter, tokenizer, eos_ids(model, tokenizer), f"{model.name}:{record.point_id}")
        try:
            scores = accuracy.evaluate(lm, spec.tasks, spec.limit, spec.num_fewshot)
        except NotImplementedError as exc:  # an engine with neither logits nor generation to score
            record.accuracy = {"skipped": str(exc)}
            return
        record.accuracy = {"tasks": scores, "reference": reference,
                           "delta": accuracy.delta(scores, reference) if reference else None,
                           "limit": spec.limit, "num_fewshot": spec.num_fewshot}
        record.metrics["accuracy_s"] = (now_ns() - start) / 1e9

    def prepare_reference(self, scenario: Scenario):
        """Compute (or find) the scenario's gate reference without touching any device: run once on
        any machine, then ship the reference directory to the runners (``--reference-dir``)."""
        return self._reference(scenario, self._resolve(scenario))

    def _gate(self, scenario: Scenario, point: Point, adapter, reference, tokenizer, record) -> None:
        from harness import gate

        spec = scenario.gate
        fail_on_drift = not adapter.runs_quantized(point) if spec.fail_on_drift == "auto" else spec.fail_on_drift
        config = gate.GateConfig(k=spec.k, mode=spec.mode, drift_factor=spec.drift_factor,
                                 fail_factor=spec.fail_factor, fail_on_drift=fail_on_drift)
        start = now_ns()
        try:
            result = gate.evaluate(adapter, reference, config)
        except NotImplementedError as no_logits:  # the engine exposes no step-wise logits on this path
            try:
                result = gate.evaluate_top1(adapter, reference, config)
            except NotImplementedError as exc:
                record.correctness = {"verdict": None, "skipped": f"{no_logits}; {exc}"}
                return
        record.correctness = result.to_dict()
        record.correctness["reference"] = {"created_at": reference.created_at, "versions": reference.versions,
                                           "noise_floor": reference.noise_floor, "prompts": len(reference.prompts),
                                           "tokens": reference.settings["tokens"]}
        record.correctness["report"] = gate.format_failures(result, reference, tokenizer) if result.reasons else ""
        if result.verdict != "pass" and getattr(adapter, "supports_hidden_states", False):
            record.correctness["diagnosis"] = self._diagnose(scenario, adapter, reference)
            layer = record.correctness["diagnosis"].get("departs_at_layer")
            if layer is not None:
                record.correctness["report"] += f"\ndiagnosis: hidden states depart from HF at decoder layer {layer}"
        record.metrics["gate_s"] = (now_ns() - start) / 1e9

    def _diagnose(self, scenario: Scenario, adapter, reference) -> dict:
        """Per-layer hidden states against HF in the reference dtype, on the first gate prompt."""
        from harness import gate
        from harness.sweep import Point

        engine = registry.get("hf")()
        model = self._resolve(scenario)
        engine.load(model, Point("hf", "cpu", None, "none", None, 1, 1, None, id="diagnosis"),
                    LoadSettings(dtype=scenario.gate.reference_dtype, threads=scenario.measurement.threads))
        try:
            first = reference.prompts[0]
            return gate.diagnose(adapter, engine, first.prompt_ids + first.tokens[:-1])
        finally:
            engine.close()

    def finished(self, scenario: Scenario, point: Point) -> Optional[results.Record]:
        """The stored record of this point when it is ``ok`` or ``skipped`` and its configuration matches."""
        if self.results_dir is None:
            return None
        path = results.record_path(self.results_dir, results.Record(scenario.name, point.id, {}, "ok"))
        try:
            record = results.read(path)
        except (OSError, ValueError):
            return None
        same = record.point == point.axes() and record.settings == json.loads(json.dumps(self._settings(scenario)))
        return record if same and record.status in ("ok", "skipped") else None

    def run(self, scenarios: Iterable[Scenario], progress: bool = True,
            select: Optional[Callable[[Point], bool]] = None, resume: bool = False, shard=None) -> list[results.Record]:
        """Run every (selected) point of every scenario, with a progress bar on stderr.

        ``resume`` keeps points whose stored record is ok or skipped with the same configuration;
        failed, timed-out and missing points run again. ``shard`` (a ``harness.shard.Shard``) keeps
        this machine's share of the selected points.
        """
        from tqdm import tqdm

        work = [(s, p) for s in scenarios for p in expand(s) if select is None or select(p)]
        if shard is not None:
            from harness.shard import select as shard_select

            work = shard_select(work, shard)
        records = []
        with tqdm(total=len(work), desc="sweep", unit="point", disable=not progress, file=sys.stderr) as bar:
            for scenario, point in work:
                bar.set_postfix_str(f"{scenario.name}::{point.id}")
                record = (self.finished(scenario, point) if resume else None) or self.run_point(scenario, point)
                records.append(record)
                bar.update()
                if record.status != "ok" and progress:
                    bar.write(f"{record.status.upper()} {scenario.name}::{point.id}: {record.reason}", file=sys.stderr)
        return records


class _Skip(Exception):
    """A point this adapter cannot run here, decided before the model loads."""
