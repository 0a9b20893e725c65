"""Run sweep points: check, load, measure, record. An exception in one point never stops the sweep."""

from __future__ import annotations

import resource
import sys
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Optional

from harness import environment, measure, models, prompts, registry, results
from harness.adapter import LoadSettings, now_ns
from harness.errors import HarnessError
from harness.scenario import Scenario
from harness.sweep import Point, expand


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


@dataclass
class Runner:
    """Runs points and writes their records. Holds resolved models so a sweep converts each once."""

    results_dir: Optional[Path] = Path("results")
    cache_dir: Optional[Path] = None

    def __post_init__(self):
        self._models: dict[str, models.ResolvedModel] = {}
        self._environment: Optional[dict] = None

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
        record = results.Record(
            scenario=scenario.name,
            point_id=point.id,
            point=point.axes(),
            status="ok",
            settings=scenario.model_dump(include={"model", "generation", "measurement", "prompts", "synthetic_prompts"}),
            environment=self._environment,
            scenario_path=scenario.path,
            started_at=_now(),
        )
        try:
            self._measure(scenario, point, record, on_round)
        except _Skip as skip:
            record.status, record.reason = "skipped", str(skip)
        except Exception as exc:  # noqa: BLE001 - any engine failure becomes a failed record
            record.status, record.reason = "failed", f"{type(exc).__name__}: {exc}".strip()
            if not isinstance(exc, HarnessError):
                record.details["traceback"] = traceback.format_exc(limit=-8)
        record.finished_at = _now()
        if self.results_dir is not None:
            results.write(record, self.results_dir)
        return record

    def _measure(self, scenario: Scenario, point: Point, record: results.Record, on_round) -> None:
        adapter_cls = registry.get(point.adapter)
        reason = adapter_cls.supports(point)
        if reason:
            raise _Skip(reason)
        model = self._resolve(scenario)
        record.model = {"name": model.name, "checksum": model.checksum, "hf_dir": str(model.hf_dir),
                        "gguf": str(model.gguf_path) if model.gguf_path else None}
        tokenizer = model.tokenizer()
        if point.prompt_len is not None:
            prompt_ids = prompts.synthetic(tokenizer, point.prompt_len, scenario.synthetic_prompts)
        else:
            prompt_ids = prompts.encode_texts(tokenizer, scenario.prompts)
        count = len(prompt_ids)
        max_new = scenario.generation.max_new_tokens
        longest = max(len(p) for p in prompt_ids)
        if point.max_seq_len is not None and longest + max_new > point.max_seq_len:
            raise _Skip(f"prompt ({longest} tokens) + max_new_tokens ({max_new}) exceeds max_seq_len {point.max_seq_len}")

        adapter = adapter_cls()
        settings = LoadSettings(dtype=scenario.model.dtype, threads=scenario.measurement.threads,
                                max_new_tokens=max_new, cache_dir=str(self.cache_dir) if self.cache_dir else None)
        start = now_ns()
        adapter.load(model, point, settings)
        load_s = (now_ns() - start) / 1e9
        try:
            outputs: dict[int, list[int]] = {}

            def generate(index: int):
                trace = adapter.generate([prompt_ids[index]] * point.batch_size, max_new)
                if trace.output_ids:
                    outputs[index] = trace.output_ids[0]
                return trace

            m = scenario.measurement
            stopping = measure.Stopping(m.warmup_rounds, m.min_rounds, m.min_time_s, m.max_rounds)
            warmups, rounds = measure.run_rounds(generate, count, stopping, max_new, on_round)
            record.adapter = adapter.describe()
        finally:
            adapter.close()

        record.metrics = {
            **measure.summarize(rounds),
            "peak_rss_mb": _peak_rss_mb(),
            "convert_s": model.convert_s,
            "load_s": load_s,
            "first_call_s": warmups[0] if warmups else None,
        }
        record.units = {k: measure.UNITS[k] for k in record.metrics if k in measure.UNITS}
        record.samples = {"rounds": [r.to_dict() for r in rounds], "warmup_s": warmups}
        record.details["outputs"] = {str(i): tokenizer.decode(ids) for i, ids in sorted(outputs.items())}
        record.details["prompt_lengths"] = [len(p) for p in prompt_ids]

    def run(self, scenarios: Iterable[Scenario], progress: bool = True,
            select: Optional[Callable[[Point], bool]] = None) -> list[results.Record]:
        """Run every (selected) point of every scenario, with a progress bar on stderr."""
        from tqdm import tqdm

        work = [(s, p) for s in scenarios for p in expand(s) if select is None or select(p)]
        records = []
        with tqdm(total=len(work), desc="sweep", unit="point", disable=not progress, file=sys.stderr) as bar:
            for scenario, point in work:
                bar.set_postfix_str(f"{scenario.name}::{point.id}")
                record = self.run_point(scenario, point)
                records.append(record)
                bar.update()
                if record.status != "ok" and progress:
                    bar.write(f"{record.status.upper()} {scenario.name}::{point.id}: {record.reason}", file=sys.stderr)
        return records


class _Skip(Exception):
    """A point this adapter cannot run here, decided before the model loads."""
