"""Loading a scenario for a run: its schema (``harness.scenario.schema``) plus the checks that need the
adapter registry, the model sources and the expanded points. Errors name file, line and field."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Iterable, Optional

from harness.adapters import engine_options, registry
from harness.errors import HarnessError, ScenarioError, ScenarioErrors
from harness.models import artefacts, source_check, sources
from harness.scenario.file import line_of, parse, read
from harness.scenario.schema import AXES, Scenario
from harness.scenario.sweep import DEFAULT_MAX_POINTS, Point, count, expand


def load(path: str | Path, max_points: int = DEFAULT_MAX_POINTS) -> Scenario:
    """Load and check one scenario file; raise ScenarioErrors naming file, line and field."""
    path = Path(path)
    return loads(read(path), str(path), default_name=path.stem, max_points=max_points)


def loads(
    text: str, path: str = "<string>", default_name: str = "scenario", max_points: int = DEFAULT_MAX_POINTS
) -> Scenario:
    scenario, root = parse(text, path, default_name)
    check(scenario, root, path, max_points)
    return scenario


def size_error(scenario: Scenario, root, path: str, max_points: int) -> Optional[ScenarioError]:
    """A sweep larger than ``max_points``, refused before it is expanded."""
    points = count(scenario)
    if points <= max_points:
        return None
    axes = " x ".join(
        f"{len(getattr(scenario.sweep, axis))} {axis}" for axis in AXES if len(getattr(scenario.sweep, axis)) > 1
    )
    return ScenarioError(
        path,
        f"the sweep expands to {points:,} points ({axes or 'one combination'}"
        f"{f' + {len(scenario.include)} include' if scenario.include else ''}), more than "
        f"the limit of {max_points:,}; split the sweep or raise the limit with --max-points "
        "(pytest: --harness-max-points)",
        line_of(root, ("sweep",)),
        "sweep",
    )


def check_unique(scenarios: Iterable[Scenario], seen: Optional[dict[str, str]] = None) -> None:
    """Two scenarios with one name in one run would write each other's records (results/<name>/):
    refuse them, naming both files. ``seen`` (name -> file) carries the names across calls."""
    from harness.io import safe_name

    seen = {} if seen is None else seen
    errors = []
    for scenario in scenarios:
        name, where = safe_name(scenario.name), str(Path(scenario.path or "<string>").resolve())
        first = seen.setdefault(name, where)
        if first != where:
            errors.append(
                ScenarioError(
                    scenario.path or "<string>",
                    f"scenario name {scenario.name!r} is also "
                    f"the name of {first}; records of both would go to the same place. "
                    "Rename one file or set a distinct `name:`",
                    field="name",
                )
            )
    if errors:
        raise ScenarioErrors(errors)


def check(scenario: Scenario, root, path: str, max_points: int = DEFAULT_MAX_POINTS) -> None:
    """Checks that span fields or need the registry; pydantic handles types."""
    too_big = size_error(scenario, root, path, max_points)
    if too_big is not None:
        raise ScenarioErrors([too_big])
    errors: list[ScenarioError] = []
    from harness.run.auto_launches import impossible

    unreachable = impossible(scenario)
    if unreachable:
        errors.append(
            ScenarioError(
                path, unreachable, line_of(root, ("measurement", "target_change")), "measurement.target_change"
            )
        )
    adapter_classes = {}
    for i, name in enumerate(scenario.sweep.adapter):
        try:
            adapter_classes[name] = registry.get(name)
        except HarnessError as exc:
            errors.append(ScenarioError(path, str(exc), line_of(root, ("sweep", "adapter", i)), f"sweep.adapter.{i}"))
    for i, entry in enumerate(scenario.include):  # include entries may name adapters the sweep does not
        name = entry.get("adapter")
        if name is not None and name not in adapter_classes:
            try:
                adapter_classes[name] = registry.get(str(name))
            except HarnessError as exc:
                errors.append(
                    ScenarioError(path, str(exc), line_of(root, ("include", i, "adapter")), f"include.{i}.adapter")
                )
    errors += option_errors(scenario, adapter_classes, root, path)
    for i, device in enumerate(scenario.sweep.device):
        if adapter_classes and not any(cls.knows_device(device) for cls in adapter_classes.values()):
            known = sorted({d for cls in adapter_classes.values() for d in cls.devices})
            errors.append(
                ScenarioError(
                    path,
                    f"no adapter in this sweep has device {device!r} (known: {', '.join(known)})",
                    line_of(root, ("sweep", "device", i)),
                    f"sweep.device.{i}",
                )
            )
    patterns = [(("exclude", i), entry) for i, entry in enumerate(scenario.exclude)]
    patterns += [(("include", i), entry) for i, entry in enumerate(scenario.include)]
    patterns += [(("known_failures", i, "match"), known.match) for i, known in enumerate(scenario.known_failures)]
    for loc, entry in patterns:
        for key in entry:
            if key not in AXES:
                close = difflib.get_close_matches(str(key), AXES, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                errors.append(
                    ScenarioError(
                        path,
                        f"unknown axis {key!r}; {hint}axes: {', '.join(AXES)}",
                        line_of(root, (*loc, key)),
                        ".".join(map(str, (*loc, key))),
                    )
                )
    problem = source_check.problem(scenario.model)
    if problem:
        errors.append(ScenarioError(path, problem, line_of(root, ("model",)), "model.source"))
    else:  # the checkpoint's vocabulary where it is cheap; harness run compares it once the model resolves
        runs = [*scenario.sweep.adapter, *(str(e["adapter"]) for e in scenario.include if "adapter" in e)]
        given = artefacts.unused(scenario.model, runs)
        given += artefacts.problems(scenario.model, artefacts.source_vocabulary(scenario.model), runs)
        errors += [ScenarioError(path, message, line_of(root, tuple(f.split("."))), f) for f, message in given]
    if not errors:
        scenario._native_precision = native_precisions(scenario, adapter_classes)
        try:
            points = expand(scenario)
        except ScenarioError as shared_id:  # two points, one id: reported with the file's other errors
            raise ScenarioErrors([shared_id]) from None
        if not points:
            errors.append(
                ScenarioError(path, "the sweep is empty: every point is excluded", line_of(root, ("sweep",)), "sweep")
            )
        errors += _contradictions(scenario, points, adapter_classes, root, path)
        excluded = artefacts.unused(scenario.model, [point.adapter for point in points]) if points else []
        for field, message in excluded:  # an adapter of the sweep whose every point is excluded
            errors.append(ScenarioError(path, message, line_of(root, tuple(field.split("."))), field))
    if errors:
        raise ScenarioErrors(errors)


def option_errors(scenario: Scenario, adapter_classes: dict, root, path: str) -> list[ScenarioError]:
    """``adapter_options.<adapter>`` checked against that adapter's ``Options``: an unknown key (with the
    closest valid one), a wrong type; refused before any point runs, never silently ignored."""
    errors = []
    for name, given in scenario.adapter_options.items():
        cls = adapter_classes.get(name)
        if cls is None:  # an unknown adapter: reported where the sweep names it
            continue
        for loc, message in engine_options.problems(name, cls.Options, given):
            where = ("adapter_options", name, *loc)
            errors.append(ScenarioError(path, message, line_of(root, where), ".".join(map(str, where))))
    return errors


def native_precisions(scenario: Scenario, adapter_classes: dict) -> dict[tuple[str, str], str]:
    """(adapter, device) -> the precision the adapter runs the model at there when quantization is ``none``,
    where the adapter says it differs from ``model.dtype`` (``Adapter.native_precision``): the point ids
    name it. A model whose file cannot be read here, or a device whose plugin cannot say, leaves the dtype
    in the id; its points report the problem when they run."""
    if "none" not in scenario.sweep.quantization and not any(
        entry.get("quantization", "none") == "none" for entry in scenario.include
    ):
        return {}
    devices = dict.fromkeys([*scenario.sweep.device, *(e["device"] for e in scenario.include if "device" in e)])
    out = {}
    for name, cls in adapter_classes.items():
        for device in devices:
            try:
                precision = cls.native_precision(scenario.model, str(device))
            except (HarnessError, OSError, ValueError):
                precision = None
            if precision:
                out[(name, str(device))] = precision
    return out


def _contradictions(scenario: Scenario, points: list[Point], adapter_classes, root, path: str) -> list[ScenarioError]:
    """Axis values that no point can ever run (e.g. beams when no adapter in the sweep has beam search).

    A value that some points can run leaves the others to skip with their reason; a value that none
    can run is a mistake in the file.
    """
    max_new = scenario.generation.max_new_tokens

    def reason(point: Point) -> Optional[str]:
        cls = adapter_classes[point.adapter]
        if not cls.knows_device(point.device):
            return f"{point.adapter} has no device {point.device!r}"
        if point.prompt_len and point.max_seq_len and point.prompt_len + max_new > point.max_seq_len:
            return f"prompt_len {point.prompt_len} + max_new_tokens {max_new} exceeds max_seq_len {point.max_seq_len}"
        return cls.capability_reason(point)

    reasons = {point.id: reason(point) for point in points}
    errors = []
    for axis in sorted(scenario.explicit_axes - {"adapter", "device"}):
        for i, value in enumerate(getattr(scenario.sweep, axis)):
            matching = [p for p in points if getattr(p, axis) == value]
            if matching and all(reasons[p.id] for p in matching):
                errors.append(
                    ScenarioError(
                        path,
                        f"no point with {axis}={value} can run: {reasons[matching[0].id]}",
                        line_of(root, ("sweep", axis, i)),
                        f"sweep.{axis}.{i}",
                    )
                )
    return errors


def check_against_models(scenarios: Iterable[Scenario], cache_dir: Optional[Path] = None) -> None:
    """Checks that need each scenario's model resolved or lm-eval's task index (``harness run`` and
    ``verify``, before any point; not ``harness check``, which loads nothing): accuracy tasks that exist,
    the gate's ``k`` within the vocabulary, given artefacts of the checkpoint's vocabulary size. ScenarioErrors
    naming file and field."""
    errors = [problem for scenario in scenarios if (problem := _unknown_tasks(scenario))]
    for scenario in scenarios:
        given = scenario.model.artefacts.model_dump(exclude_none=True)
        if scenario.gate is None and not given:
            continue
        try:
            model = sources.resolve(scenario.model, sources.cache_dir(cache_dir))
            # the logits' width, which top-k ranks: the config says it; Gemma's tokenizer.json takes ~2 s to parse
            config_vocabulary = artefacts.checkpoint_vocabulary(model.hf_dir)
            vocabulary = config_vocabulary
            if vocabulary is None and scenario.gate is not None:
                vocabulary = model.tokenizer().get_vocab_size()
        except (HarnessError, OSError, ValueError):
            continue  # a model that does not resolve fails its points with its own reason, as before
        for field, message in artefacts.problems(scenario.model, config_vocabulary):
            errors.append(ScenarioError(scenario.path or "<string>", message, field=field))
        if scenario.gate is None or vocabulary is None:
            continue
        if scenario.gate.k > vocabulary:
            errors.append(
                ScenarioError(
                    scenario.path or "<string>",
                    f"{scenario.gate.k} is more than the model's vocabulary ({vocabulary:,} tokens); "
                    "top-k agreement needs k below it (5 is usual)",
                    field="gate.k",
                )
            )
    if errors:
        raise ScenarioErrors(errors)


def _unknown_tasks(scenario: Scenario) -> Optional[ScenarioError]:
    """Accuracy tasks neither shipped nor known to the installed lm-eval (its index is read only when a
    task is not shipped: indexing takes seconds)."""
    from harness.accuracy import evaluate

    if scenario.accuracy is None or evaluate.unavailable():
        return None  # without lm-eval the points say so themselves
    tasks = scenario.accuracy.tasks
    if set(tasks) <= evaluate.SHIPPED:
        return None
    known = evaluate.task_manager(tasks).all_tasks
    unknown = [name for name in tasks if name not in known]
    if not unknown:
        return None
    return ScenarioError(
        scenario.path or "<string>",
        f"{', '.join(map(repr, unknown))} unknown: not shipped ({', '.join(sorted(evaluate.SHIPPED))}) and not an "
        "lm-eval task, group or tag installed here",
        field="accuracy.tasks",
    )
