"""Reading a scenario file: its text (bounded, UTF-8), its schema check, and errors that name the file,
the line and the field (``harness.run.planning`` adds the checks that need adapters, models and points)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from harness.errors import ScenarioError, ScenarioErrors
from harness.scenario import yaml_load
from harness.scenario.schema import Scenario


def read(path: str | Path) -> str:
    """A scenario file's text; ScenarioErrors naming the file when it cannot be read."""
    return yaml_load.read_text(path)  # bounded, UTF-8 only


def parse(text: str, path: str = "<string>", default_name: str = "scenario") -> tuple[Scenario, yaml.Node]:
    """Validate the schema of one scenario's YAML: (the scenario, its YAML tree for line numbers).

    Checks that need the adapter registry, the model sources or the sweep's points live in
    ``harness.run.planning``, whose ``load``/``loads`` run both.
    """
    root, data = yaml_load.compose(text, path)  # safe tags only; no aliases, duplicate keys or bombs
    if not isinstance(data, dict):
        raise ScenarioErrors([ScenarioError(path, "expected a mapping of scenario fields at the top level", 1)])
    data = dict(data)
    data.setdefault("name", default_name)
    data["path"] = path
    try:
        return Scenario.model_validate(data), root
    except ValidationError as exc:
        raise ScenarioErrors([_to_scenario_error(err, root, path) for err in exc.errors()]) from None


def line_of(root: yaml.Node | None, loc: tuple) -> int | None:
    """Line (1-based) of the YAML node at ``loc``; the nearest enclosing node when it is absent."""
    if root is None:
        return None
    node, line = root, root.start_mark.line + 1
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                if knode.value == str(key):
                    node, line = vnode, knode.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _model_for(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of ``loc`` (for typo suggestions)."""
    model: type[BaseModel] | None = Scenario
    for key in loc[:-1]:
        field = model.model_fields.get(key) if model else None
        annotation = field.annotation if field else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return model


def _to_scenario_error(err: Mapping[str, Any], root, path: str) -> ScenarioError:
    loc = tuple(part for part in err["loc"] if isinstance(part, (str, int)))
    field = ".".join(str(p) for p in loc) or "(top level)"
    line = line_of(root, loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _model_for(loc)
        valid = [n for n in owner.model_fields if n != "path"] if owner else []
        close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return ScenarioError(path, f"unknown field; {hint}valid fields: {', '.join(valid)}", line, field)
    if kind == "missing":
        return ScenarioError(path, "required field is missing", line, field)
    if kind == "value_error":  # our own validators already say what they got
        return ScenarioError(path, err["msg"].removeprefix("Value error, "), line, field)
    message = err["msg"][0].lower() + err["msg"][1:]
    if "input" in err and kind not in ("too_short",):
        message += f", got {err['input']!r}"
    return ScenarioError(path, message, line, field)
