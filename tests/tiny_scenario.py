"""The tiny scenario most tests run, and its variations: ``tiny(**sections)`` gives its YAML with the sections
a test changes; the ``write_scenario`` fixture (``tests/conftest.py``) writes it to a file. A test whose point
is the exact text of a file (hostile YAML, the line an error names) writes that text itself."""

from __future__ import annotations

from typing import Any

import yaml

# One prompt, four tokens, one timed round, on the fake engine: what a test of the run's plumbing needs.
TINY: dict[str, Any] = {
    "model": "tiny-llama",
    "prompts": ["The river"],
    "generation": {"max_new_tokens": 4},
    "measurement": {"warmup_rounds": 0, "min_rounds": 1},
    "sweep": {"adapter": ["fake"]},
}
MERGED = ("generation", "measurement", "sweep")  # sections whose keys are changed one by one


def tiny(**sections: Any) -> str:
    """The tiny scenario's YAML with ``sections`` changed: ``generation``, ``measurement`` and ``sweep`` merge
    into the defaults key by key, any other section replaces or adds (``name``, ``gate``, ``include``, ...);
    ``None`` removes a section or a key (``prompts=None``: the default prompt set)."""
    data = {key: dict(value) if isinstance(value, dict) else value for key, value in TINY.items()}
    for key, value in sections.items():
        if key in MERGED and isinstance(value, dict):
            merged = {**data.get(key, {}), **value}
            data[key] = {k: v for k, v in merged.items() if v is not None}
        else:
            data[key] = value
    last = ("sweep", "include", "exclude")  # the sweep reads best at the end, as in the shipped scenarios
    order = ["name", *(key for key in data if key not in last and key != "name"), *last]
    ordered = {key: data[key] for key in order if data.get(key) is not None}
    return yaml.safe_dump(ordered, sort_keys=False, default_flow_style=None, width=200)
