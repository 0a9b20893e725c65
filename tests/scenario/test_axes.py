"""The sweep axes are declared once, on their ``Sweep`` fields; every list of axes derives from that, and
a sweep never loses a point to an id it shares with another."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from harness.adapters.base import Adapter
from harness.adapters.capabilities import Capabilities
from harness.errors import ScenarioError, ScenarioErrors
from harness.report import tables
from harness.report.sections.points import POINT_COLUMNS
from harness.run import planning
from harness.scenario import sweep
from harness.scenario.axes import AxisFacts, axes_of
from harness.scenario.schema import AXES, QUANTIZATIONS, SWEEP_AXES, Scenario, Sweep
from harness.scenario.sweep import Point, expand


def test_every_list_of_axes_is_the_declared_one():
    declared = [axis.name for axis in SWEEP_AXES]
    assert list(AXES) == declared == list(Sweep.model_fields)
    assert [f.name for f in dataclasses.fields(Point)] == [*declared, "id"]
    assert sorted(sweep.ID_ORDER) == sorted(declared) and len(sweep.ID_ORDER) == len(declared)
    assert set(sweep._LEAD).isdisjoint(sweep._ID_PARTS)
    assert tables.IDENTITY == ["scenario", "host", "model", *sweep.ID_ORDER]
    assert [c for c in POINT_COLUMNS if c in AXES] == list(sweep.ID_ORDER)
    assert Point(adapter="hf").axes() == {axis.name: axis.default for axis in SWEEP_AXES} | {"adapter": "hf"}


def test_existing_ids_are_unchanged():
    assert sweep._LEAD == ("adapter", "device", "quantization")
    assert sweep._ID_PARTS == {
        "max_seq_len": "seq",
        "prompt_len": "prompt",
        "beam_width": "beam",
        "batch_size": "bs",
        "moe_chunk_size": "chunk",
        "moe_capacity": "cap",
        "speculative": "spec-",
    }


def test_a_field_without_its_axis_facts_is_refused_at_declaration():
    class Forgotten(Sweep):
        new_axis: list[int] = Field(default_factory=lambda: [1], min_length=1)

    with pytest.raises(TypeError, match="Forgotten.new_axis: declare the axis once"):
        axes_of(Forgotten)


@pytest.mark.parametrize("prefix", ["bs", "b", ""])
def test_a_prefix_that_clashes_or_names_nothing_is_refused_at_declaration(prefix):
    class Clashing(Sweep):
        new_axis: Annotated[list[int], AxisFacts(prefix)] = Field(default_factory=lambda: [1], min_length=1)

    with pytest.raises(TypeError, match="Clashing"):
        axes_of(Clashing)


def test_point_that_drifts_from_the_axes_is_refused(monkeypatch):
    extra = dataclasses.replace(SWEEP_AXES[-1], name="new_axis")
    monkeypatch.setattr(sweep, "SWEEP_AXES", (*SWEEP_AXES, extra))
    with pytest.raises(TypeError, match="give Point one field per axis"):
        sweep._check_point_fields()


def load(text: str):
    return planning.loads(text, "s.yaml", "s")


def test_an_axis_missing_from_the_id_raises_instead_of_dropping_points(monkeypatch):
    monkeypatch.setattr(sweep, "_ID_PARTS", {k: v for k, v in sweep._ID_PARTS.items() if k != "batch_size"})
    with pytest.raises(ScenarioErrors) as caught:
        load("model: tiny-llama\nsweep: {adapter: [hf], batch_size: [1, 8]}\n")
    (error,) = caught.value.errors
    message = str(error)
    assert message.startswith("s.yaml: sweep: two different points get the id 'hf-cpu-bf16'")
    assert "batch_size=1" in message and "batch_size=8" in message and "they differ in batch_size" in message
    assert "declare its id prefix" in message


def test_a_prefix_collision_raises_instead_of_dropping_points(monkeypatch):
    monkeypatch.setattr(sweep, "_ID_PARTS", {**sweep._ID_PARTS, "moe_chunk_size": "c", "moe_capacity": "c"})
    scenario = Scenario.model_validate(
        {
            "name": "s",
            "model": "tiny-llama",
            "sweep": {"adapter": ["hf"], "moe_chunk_size": [None, 8], "moe_capacity": [None, 8]},
        }
    )
    with pytest.raises(ScenarioError, match="'hf-cpu-bf16-c8'.*differ in moe_chunk_size, moe_capacity"):
        expand(scenario)


def test_an_include_value_of_the_wrong_type_raises_instead_of_dropping_a_point():
    with pytest.raises(ScenarioErrors, match=r"s.yaml: sweep: .*'hf-cpu-bf16-beam4'.*beam_width=4.*beam_width='4'"):
        load("model: tiny-llama\nsweep: {adapter: [hf], beam_width: [1, 4]}\ninclude: [{beam_width: '4'}]\n")


def test_an_include_equal_to_a_product_point_is_kept_once():
    scenario = load("model: tiny-llama\nsweep: {adapter: [hf], beam_width: [1, 4]}\ninclude: [{beam_width: 4}]\n")
    assert [p.id for p in expand(scenario)] == ["hf-cpu-bf16-beam1", "hf-cpu-bf16-beam4"]


optional_ints = st.one_of(st.none(), st.integers(1, 4096))
VALUES = {
    "adapter": st.sampled_from(["hf", "fake", "openvino"]),
    "device": st.sampled_from(["cpu", "CPU", "NPU"]),
    "max_seq_len": optional_ints,
    "quantization": st.sampled_from(QUANTIZATIONS),
    "prompt_len": optional_ints,
    "beam_width": st.integers(1, 8),
    "batch_size": st.integers(1, 8),
    "moe_chunk_size": optional_ints,
    "moe_capacity": optional_ints,
    # as points hold them (harness.scenario.speculative.canonical): the test compares include entries raw
    "speculative": st.sampled_from(
        ["none", "prompt_lookup:ngram=2:tokens=10", "draft:tokens=3:quantization=none:source=tiny-qwen2"]
    ),
}
assert set(VALUES) == set(AXES), "a new axis needs its values here"
sweeps = st.fixed_dictionaries(
    {"adapter": st.lists(VALUES["adapter"], min_size=1, max_size=2)},
    optional={axis: st.lists(values, min_size=1, max_size=2) for axis, values in VALUES.items() if axis != "adapter"},
)
includes = st.lists(st.fixed_dictionaries({}, optional=VALUES), max_size=3)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(sweeps, includes, st.sampled_from(["bf16", "fp32", "fp16"]))
def test_a_sweep_never_loses_a_point(axes, include, dtype):
    scenario = Scenario.model_validate(
        {"name": "s", "model": {"source": "tiny-llama", "dtype": dtype}, "sweep": axes, "include": include}
    )
    values = [getattr(scenario.sweep, axis) for axis in AXES]
    first = {axis: column[0] for axis, column in zip(AXES, values)}
    combinations = set(itertools.product(*values)) | {tuple({**first, **entry}[a] for a in AXES) for entry in include}
    points = expand(scenario)
    assert len(points) == len(combinations)
    assert {tuple(p.axes().values()) for p in points} == combinations
    assert len({p.id for p in points}) == len(points)


class Bare(Adapter):
    """An adapter with no axis capabilities."""

    name = "bare"
    devices = ("cpu",)

    @classmethod
    def available(cls):
        return True, "bare"

    def load(self, model, point, settings):
        pass

    def generate(self, prompts, max_new_tokens):
        raise AssertionError("never runs")


NON_DEFAULT = {"speculative": "prompt_lookup:ngram=2:tokens=10"}  # axes whose values are not numbers


@pytest.mark.parametrize("axis", [axis for axis in SWEEP_AXES if axis.needs], ids=lambda axis: axis.name)
def test_each_axis_capability_is_an_adapter_flag_that_refuses_non_default_values(axis):
    # declared with the other flags (harness.adapters.capabilities), which every Adapter inherits
    assert isinstance(getattr(Adapter, axis.needs.flag), bool) and axis.needs.flag in Capabilities.__annotations__
    value = NON_DEFAULT.get(axis.name, 8)
    point = Point(adapter="bare", **{axis.name: value})
    assert Bare.capability_reason(point) == f"bare {axis.needs.lacking} ({axis.name}={value})"
    Capable = type("Capable", (Bare,), {axis.needs.flag: True})
    assert Capable.capability_reason(point) is None
    assert Bare.capability_reason(Point(adapter="bare")) is None
