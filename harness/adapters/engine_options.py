"""An adapter's options: the scenario's ``adapter_options: {<adapter>: {...}}``, declared by each adapter as a
pydantic model (its ``Options`` class attribute, derived from ``AdapterOptions``) and checked before any point
runs, so a misspelt engine option is refused with the closest valid key instead of being silently ignored."""

from __future__ import annotations

import difflib
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

T = TypeVar("T", bound="AdapterOptions")


class AdapterOptions(BaseModel):
    """Base of every adapter's ``Options``: an unknown key is an error, and the options are immutable once
    validated (``load`` receives them as ``settings.options``; the record keeps them as the engine got them).
    An adapter that takes no options keeps this empty model, so any key given to it is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def of(cls: type[T], given: AdapterOptions) -> T:
        """``given`` (a ``LoadSettings.options``) as these options: itself when a run built it from the scenario;
        this model's defaults when ``load`` is called with a ``LoadSettings`` built by hand (no options)."""
        return given if isinstance(given, cls) else cls.model_validate(given.model_dump())


def problems(adapter: str, options: type[AdapterOptions], given: dict[str, Any]) -> list[tuple[tuple, str]]:
    """What is wrong with ``given`` as ``adapter``'s options: (the key's path inside them, what was expected)
    per problem; empty when they validate."""
    try:
        options.model_validate(given)
    except ValidationError as exc:
        return [_problem(adapter, options, err) for err in exc.errors()]
    return []


def _problem(adapter: str, options: type[AdapterOptions], err) -> tuple[tuple, str]:
    loc = tuple(part for part in err["loc"] if isinstance(part, (str, int)))
    valid = list(options.model_fields)
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        if not valid:
            return loc, f"unknown option {loc[0]!r}: adapter {adapter!r} takes no options"
        close = difflib.get_close_matches(str(loc[0]), valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return loc, f"unknown option {loc[0]!r} of adapter {adapter!r}{hint} (its options: {', '.join(valid)})"
    message = err["msg"].removeprefix("Value error, ").replace("Input should be", "expected")
    message = message[0].lower() + message[1:]
    if "input" in err and err["type"] != "missing":
        message += f", got {err['input']!r}"[:200]
    return loc, f"adapter {adapter!r}: {message}"
