"""The speculative axis as a scenario writes it: one canonical value per point (so it enters ids, settings and
keys), bad values refused naming the field, and adapters that cannot speculate skipping before any load."""

from __future__ import annotations

import pytest

from harness.adapters.base import Adapter
from harness.errors import ScenarioErrors
from harness.run import planning
from harness.scenario.speculative import canonical, id_part, parse
from harness.scenario.sweep import Point, expand


def load(text: str):
    return planning.loads(text, "s.yaml", "s")


def test_each_written_form_becomes_one_canonical_value_with_a_readable_id():
    scenario = load(
        "model: tiny-llama\n"
        "sweep:\n"
        "  adapter: [llamacpp]\n"
        "  speculative: [none, prompt_lookup, {prompt_lookup: {ngram: 3, tokens: 4}},\n"
        "                {draft: tiny-qwen2, tokens: 3}, {draft: {quantization: int4_sym}}]\n"
    )
    points = expand(scenario)
    assert [p.speculative for p in points] == [
        "none",
        "prompt_lookup:ngram=2:tokens=10",
        "prompt_lookup:ngram=3:tokens=4",
        "draft:tokens=3:quantization=none:source=tiny-qwen2",
        "draft:tokens=5:quantization=int4_sym:source=target",
    ]
    assert [p.id for p in points] == [
        "llamacpp-cpu-f16-spec-none",
        "llamacpp-cpu-f16-spec-lookup2x10",
        "llamacpp-cpu-f16-spec-lookup3x4",
        "llamacpp-cpu-f16-spec-draft3-tiny-qwen2",
        "llamacpp-cpu-f16-spec-draft5-target-int4_sym",
    ]
    assert parse(points[2].speculative).ngram == 3 and parse(points[3].speculative).source == "tiny-qwen2"
    for point in points:  # the canonical text reads back as itself
        assert canonical(point.speculative) == point.speculative


def test_a_sweep_that_leaves_the_axis_out_keeps_its_ids():
    assert [p.id for p in expand(load("model: tiny-llama\nsweep: {adapter: [hf]}\n"))] == ["hf-cpu-bf16"]


def test_include_and_exclude_take_the_written_forms():
    scenario = load(
        "model: tiny-llama\n"
        "sweep: {adapter: [hf, llamacpp], speculative: [none, prompt_lookup]}\n"
        "exclude: [{adapter: llamacpp, speculative: prompt_lookup}]\n"
        "include: [{adapter: llamacpp, speculative: {draft: tiny-qwen2, tokens: 2}}]\n"
    )
    assert [p.id for p in expand(scenario)] == [
        "hf-cpu-bf16-spec-none",
        "hf-cpu-bf16-spec-lookup2x10",
        "llamacpp-cpu-f16-spec-none",
        "llamacpp-cpu-f16-spec-draft2-tiny-qwen2",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lookup", "expected none, prompt_lookup or"),
        ("{prompt_lookup: {tokens: 0}}", "prompt_lookup.tokens: expected a whole number 1..64, got 0"),
        ("{prompt_lookup: {ngrams: 2}}", "prompt_lookup: unknown key 'ngrams'"),
        ("{draft: tiny-qwen2, quantization: int3}", "draft.quantization: expected one of"),
        ("{draft: tiny-qwen2, token: 3}", "draft: unknown key 'token'"),
    ],
)
def test_a_bad_value_is_refused_naming_the_field(value, message):
    with pytest.raises(ScenarioErrors, match=r"s.yaml:2: sweep.speculative.*" + message.replace("{", r"\{")):
        load(f"model: tiny-llama\nsweep: {{adapter: [hf], speculative: [{value}]}}\n")


def test_a_draft_id_names_its_file_not_its_path():
    assert id_part("draft:tokens=4:quantization=none:source=/models/small.gguf") == "draft4-small"


class Plain(Adapter):
    name = "plain"
    devices = ("cpu",)

    @classmethod
    def available(cls):
        return True, "plain"

    def load(self, model, point, settings):
        raise AssertionError("never loads")

    def generate(self, prompts, max_new_tokens):
        raise AssertionError("never runs")


class Speculating(Plain):
    def generate_plain(self, prompts, max_new_tokens):
        raise AssertionError("never runs")


def test_an_adapter_declares_speculation_by_its_plain_path_and_points_it_cannot_run_skip_with_the_reason():
    lookup = "prompt_lookup:ngram=2:tokens=10"
    assert not Plain.supports_speculative and Speculating.supports_speculative
    assert Plain.supports(Point(adapter="plain", speculative=lookup)) == (
        f"plain has no speculative decoding (speculative={lookup})"
    )
    assert Speculating.supports(Point(adapter="plain", speculative=lookup)) is None
    beams = type("Beams", (Speculating,), {"supports_beams": True})
    assert "one greedy sequence" in beams.supports(Point(adapter="plain", speculative=lookup, beam_width=2))
    draft = "draft:tokens=5:quantization=int4_sym:source=target"
    assert Speculating.supports(Point(adapter="plain", speculative=draft)) == (
        "plain cannot run a draft at quantization 'int4_sym' (supports: none)"
    )
