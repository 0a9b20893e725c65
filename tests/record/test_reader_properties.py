"""Property tests (Hypothesis): arbitrary input to the readers a user or another runner feeds — scenario
text, the threshold option, record files and benchmark JSON — ends in a valid object or one typed error,
never another exception or a hang. Fixed seed and a bounded example budget (CI runs them every time)."""

from __future__ import annotations

import json
import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioErrors, UsageError
from harness.records import store
from harness.records.record import Record
from harness.regression.thresholds import parse_thresholds
from harness.scenario import file as scenario_file
from harness.scenario.schema import Scenario
from harness.scenario.sweep import expand
from tests.records import record

BUDGET = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# Keys a scenario has, so generated documents reach deep into the schema instead of failing at the top.
KEYS = ["name", "model", "prompts", "generation", "measurement", "gate", "sweep", "include", "exclude", "accuracy"]
KEYS += ["adapter", "device", "max_seq_len", "quantization", "prompt_len", "beam_width", "batch_size", "source"]
KEYS += ["max_new_tokens", "min_rounds", "threads", "launches", "k", "tokens", "tasks", "dtype", "moe_chunk_size"]
scenario_docs = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=25,
)


@BUDGET
@given(st.text(alphabet=string.printable + "é€😀\x00", max_size=400))
def test_any_scenario_text_is_a_scenario_or_scenario_errors(text):
    try:
        scenario, _ = scenario_file.parse(text, "x.yaml")
    except ScenarioErrors as exc:
        assert exc.errors and all(e.path == "x.yaml" for e in exc.errors)
    else:
        assert isinstance(scenario, Scenario)


@BUDGET
@given(scenario_docs)
def test_any_yaml_document_is_a_scenario_or_scenario_errors_and_expands(doc):
    text = yaml.safe_dump(doc, allow_unicode=True)
    try:
        scenario, _ = scenario_file.parse(text, "x.yaml")
    except ScenarioErrors as exc:
        assert exc.errors
        return
    try:
        points = expand(scenario)
    except ScenarioErrors:
        return  # two distinct points with one id: refused, never dropped
    assert len({p.id for p in points}) == len(points)


@BUDGET
@given(st.text(alphabet=string.ascii_letters + string.digits + "=%,._- msMS", max_size=40))
def test_any_threshold_text_is_thresholds_or_a_usage_error(text):
    try:
        found = parse_thresholds(text)
    except UsageError as exc:
        assert str(exc)
    else:
        assert all(t.metric for t in found)


@BUDGET
@given(json_values)
def test_any_json_file_is_records_or_one_value_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("r") / "x.json"
    path.write_text(json.dumps(data))  # NaN/Infinity included: Python writes them, the reader must refuse
    try:
        found = list(store.iter_records([path]))
    except ValueError as exc:
        assert "x.json" in str(exc)
    else:
        assert all(isinstance(r, Record) for _, r in found)


def _paths(data, prefix=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data[:3]):
            yield (*prefix, i)
            yield from _paths(value, (*prefix, i))


VALID = record("p", tpot_ms=20.0).to_dict()
FIELDS = sorted(_paths(VALID), key=str)


@BUDGET
@given(st.sampled_from(FIELDS), json_values)
def test_a_record_with_any_field_replaced_is_a_record_or_one_value_error(field, value):
    data = json.loads(json.dumps(VALID))
    target = data
    for step in field[:-1]:
        target = target[step]
    target[field[-1]] = value
    try:
        Record.from_dict(data, source="r.json")
    except ValueError as exc:
        assert str(exc).startswith("r.json")


@BUDGET
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_as_a_record_file_are_records_or_one_value_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("b") / "x.json"
    path.write_bytes(data)
    try:
        list(store.iter_records([path]))
    except ValueError as exc:
        assert "x.json" in str(exc)
