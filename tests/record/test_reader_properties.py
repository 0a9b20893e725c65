"""Property tests (Hypothesis): arbitrary input to the readers a user or another runner feeds — scenario
text, the threshold option, record files and benchmark JSON — ends in a valid object or one typed error,
never another exception or a hang. Fixed seed and a bounded example budget (CI runs them every time)."""

from __future__ import annotations

import json
import string

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioErrors, UsageError
from harness.records import metrics as catalogue
from harness.records import store
from harness.records.gate_verdicts import VERDICTS
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
# parts the loader reads before the schema validates them (found by this property: a traceback)
@example(("engine", "extra"), 1)
@example(("engine",), [])
@example(("point",), "x")
@example(("settings", "model"), 1)
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


# -- values that cannot have happened (issue 38): refused naming the field, whatever the shape allows ---------

WEEK_S = 7 * 24 * 3600
SECONDS = {"ms": 1e-3, "ms/token": 1e-3, "s": 1.0}
WORK = {"ttft_ms", "e2e_ms", "tpot_ms", "ms_per_token_mean"}  # the harness's own clock over real work: > 0
figures = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 1e308, -1e-300, 5e-324])


def _loads(data: dict) -> str | None:
    """None when ``data`` loads as a record, else the refusal (which must name the file)."""
    try:
        Record.from_dict(data, source="r.json")
    except ValueError as exc:
        assert str(exc).startswith("r.json: ")
        return str(exc)
    return None


@BUDGET
@given(st.sampled_from([m.name for m in catalogue.CATALOGUE]), figures)
def test_a_metric_loads_exactly_when_it_could_have_been_measured(name, value):
    data = json.loads(json.dumps(VALID))
    data["metrics"][name] = value
    unit = catalogue.BY_NAME[name].unit
    possible = value >= 0 and (value > 0 or name not in WORK) and value * SECONDS.get(unit, 0) <= WEEK_S
    refused = _loads(data)
    assert (refused is None) == possible, (name, value, refused)
    if refused:
        assert refused.startswith(f"r.json: metrics.{name}: expected")


@BUDGET
@given(st.sampled_from(["kl_mean", "noise_floor", "kl_ratio"]), figures)
def test_a_divergence_loads_exactly_when_it_is_not_negative(field, value):
    data = json.loads(json.dumps(VALID))
    data["correctness"][field] = value
    refused = _loads(data)
    assert (refused is None) == (value >= 0), (field, value, refused)
    if refused:
        assert refused.startswith(f"r.json: correctness.{field}: expected")


@BUDGET
@given(st.text(max_size=12) | st.sampled_from(VERDICTS))
def test_a_verdict_loads_exactly_when_it_is_a_verdict_word(word):
    data = json.loads(json.dumps(VALID))
    data["correctness"]["verdict"] = word
    refused = _loads(data)
    assert (refused is None) == (word in VERDICTS), (word, refused)
    if refused:
        assert refused.startswith("r.json: correctness.verdict: expected")


@BUDGET
@given(st.text(alphabet=string.ascii_letters + "./\\\x00\x1f-_", min_size=0, max_size=12))
def test_a_point_id_loads_exactly_when_it_is_a_safe_path_component(point_id):
    data = json.loads(json.dumps(VALID))
    data["point_id"] = point_id
    safe = bool(point_id) and not any(bad in point_id for bad in ("/", "\\", "..", "\x00", "\x1f"))
    refused = _loads(data)
    assert (refused is None) == safe, (point_id, refused)
    if refused:
        assert refused.startswith("r.json: point_id: expected")


@BUDGET
@given(
    st.lists(st.floats(min_value=1.0, max_value=1e3), min_size=1, max_size=6), st.floats(min_value=0.5, max_value=2e3)
)
def test_a_point_median_loads_exactly_when_it_lies_within_its_launches(medians, value):
    data = json.loads(json.dumps(VALID))
    data["samples"]["launches"] = [{"index": i, "medians": {"tpot_ms": v}} for i, v in enumerate(medians)]
    data["metrics"]["tpot_ms"] = value
    slack = 1e-9 * max(medians)
    refused = _loads(data)
    if min(medians) <= value <= max(medians):
        assert refused is None, refused
    elif not (min(medians) - slack <= value <= max(medians) + slack):
        assert refused is not None and refused.startswith("r.json: metrics.tpot_ms: expected a median within")
