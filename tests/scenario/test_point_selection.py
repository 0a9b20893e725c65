"""``-k`` selects points with pytest's expression language and exact id parts, given once or several times;
``harness check`` names points as every other command does (``scenario::id``)."""

from __future__ import annotations

import pytest

from harness.cli.app import main
from harness.errors import UsageError
from harness.scenario.selection import parse, selector
from tests.tiny_scenario import tiny

IDS = [("s", i) for i in ("hf-cpu-bf16-prompt16", "hf-cpu-f16-prompt16", "hf-cpu-f16-prompt160", "ov-CPU-f16-prompt16")]


def kept(*expressions: str) -> list[str]:
    keep = selector(expressions, IDS)
    return [point_id for scenario, point_id in IDS if keep(scenario, point_id)]


def test_a_word_that_is_a_whole_part_of_an_id_matches_that_part_only():
    assert kept("f16") == ["hf-cpu-f16-prompt16", "hf-cpu-f16-prompt160", "ov-CPU-f16-prompt16"]  # not bf16
    assert kept("prompt16") == ["hf-cpu-bf16-prompt16", "hf-cpu-f16-prompt16", "ov-CPU-f16-prompt16"]
    assert kept("cpu") == [i for _, i in IDS]  # case-insensitive, as pytest
    assert kept("hf-cpu-f16-prompt16") == ["hf-cpu-f16-prompt16"]  # a whole id: that point only
    assert kept("prompt1") == [i for _, i in IDS]  # any other word: a substring, as pytest


def test_and_or_not_and_parentheses_and_several_k():
    assert kept("f16 and not prompt160") == ["hf-cpu-f16-prompt16", "ov-CPU-f16-prompt16"]
    assert kept("bf16 or (ov and prompt16)") == ["hf-cpu-bf16-prompt16", "ov-CPU-f16-prompt16"]
    assert kept("not not bf16") == ["hf-cpu-bf16-prompt16"]
    assert kept("bf16", "prompt160") == ["hf-cpu-bf16-prompt16", "hf-cpu-f16-prompt160"]  # any of them
    assert kept("s::hf-cpu-bf16") == ["hf-cpu-bf16-prompt16"]  # the scenario's name is part of the name


@pytest.mark.parametrize("text", ["", "f16 and", "(f16", "f16 bf16", "and f16", "f16 ! bf16"])
def test_a_broken_expression_is_refused_quoting_it(text):
    with pytest.raises(UsageError, match="-k "):
        parse(text)


def test_check_names_points_scenario_colon_colon_id(write_scenario, capsys):
    path = write_scenario(tiny(name="named", sweep={"adapter": ["hf"], "prompt_len": [16, 160]}), "file_name.yaml")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.split() == ["named::hf-cpu-bf16-prompt16", "named::hf-cpu-bf16-prompt160"]


def test_run_k_keeps_what_the_expressions_select(write_scenario, tmp_path, fake_adapters, capsys):
    path = write_scenario(tiny(name="sel", sweep={"prompt_len": [16, 160, 32]}))
    run = ["run", str(path), "--results", str(tmp_path / "r"), "--isolation", "none", "--no-energy", "--no-progress"]
    assert main([*run, "-k", "prompt16"]) == 0
    assert sorted(p.stem for p in (tmp_path / "r" / "sel").glob("*.json")) == ["fake-cpu-bf16-prompt16"]
    assert main([*run, "-k", "prompt160", "-k", "prompt32"]) == 0
    assert sorted(p.stem for p in (tmp_path / "r" / "sel").glob("*.json")) == [
        "fake-cpu-bf16-prompt16",
        "fake-cpu-bf16-prompt160",
        "fake-cpu-bf16-prompt32",
    ]
    capsys.readouterr()
    assert main([*run, "-k", "prompt99"]) == 2
    assert "no point matches -k 'prompt99'" in capsys.readouterr().err
    assert main([*run, "-k", "prompt16 and"]) == 2
