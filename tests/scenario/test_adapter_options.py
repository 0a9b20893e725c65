"""``adapter_options`` are checked against the adapter's declared ``Options`` before any point runs: ``harness
check`` and ``harness run`` refuse an unknown or misspelt key (naming the file, the adapter, the key and the
closest valid key) and a wrong type, with exit 2; a valid option reaches the engine, and the record says so."""

from __future__ import annotations

import pytest

from harness.cli.app import main
from harness.records import store
from tests.conftest import registered
from tests.fakes import FakeAdapter
from tests.refusals import refused_in_one_line


@pytest.fixture
def fake():
    """The fake adapter alone: ``harness check`` loads no model."""
    yield from registered([FakeAdapter])


def _scenario(write_scenario, options: str, adapter: str = "fake"):
    return write_scenario(f"""
        model: tiny-llama
        prompts: ["The river"]
        generation: {{max_new_tokens: 4}}
        measurement: {{warmup_rounds: 0, min_rounds: 1}}
        adapter_options:
          {adapter}: {options}
        sweep:
          adapter: [{adapter}]
        """)


def test_check_refuses_a_misspelt_option_naming_the_closest_valid_key(write_scenario, capsys):
    path = _scenario(write_scenario, "{chat_templat: checkpoint}", adapter="llamacpp")
    err = refused_in_one_line(["check", str(path)], capsys)
    assert err == (
        f"ERROR {path}:6: adapter_options.llamacpp.chat_templat: unknown option 'chat_templat' of adapter "
        "'llamacpp'; did you mean 'chat_template'? (its options: chat_template, extra_buffer_types)"
    )


def test_check_refuses_an_unknown_option_with_no_close_match(write_scenario, capsys, fake):
    path = _scenario(write_scenario, "{knob: 3}")
    err = refused_in_one_line(["check", str(path)], capsys)
    assert err == (
        f"ERROR {path}:6: adapter_options.fake.knob: unknown option 'knob' of adapter 'fake' "
        "(its options: token_period)"
    )


def test_an_adapter_without_options_refuses_any(write_scenario, capsys):
    path = _scenario(write_scenario, "{threads: 4}", adapter="hf")
    err = refused_in_one_line(["check", str(path)], capsys)
    assert err == f"ERROR {path}:6: adapter_options.hf.threads: unknown option 'threads': adapter 'hf' takes no options"


def test_check_refuses_an_option_of_the_wrong_type(write_scenario, capsys, fake):
    path = _scenario(write_scenario, "{token_period: many}")
    err = refused_in_one_line(["check", str(path)], capsys)
    assert err.startswith(
        f"ERROR {path}:6: adapter_options.fake.token_period: adapter 'fake': expected a valid integer"
    )
    assert err.endswith("got 'many'")


def test_run_refuses_a_misspelt_option_before_any_point_runs(write_scenario, tmp_path, capsys, fake):
    path = _scenario(write_scenario, "{token_perod: 3}")
    results = tmp_path / "results"
    err = refused_in_one_line(
        ["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress"], capsys
    )
    assert "adapter_options.fake.token_perod: unknown option 'token_perod'" in err and "'token_period'?" in err
    assert not (results.exists() and any(results.rglob("*.json")))  # no point ran


def test_a_valid_option_reaches_the_engine_and_the_record_shows_it(write_scenario, tmp_path, capsys, fake_adapters):
    path = _scenario(write_scenario, "{token_period: 3}")
    results = tmp_path / "results"
    argv = ["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress", "--no-energy"]
    assert main(argv) == 0, capsys.readouterr().err
    ((_, record),) = list(store.iter_records([results]))
    assert record.status == "ok", record.reason
    assert record.engine.options == {"token_period": 3}  # as load received them
    assert record.engine.extra["token_period"] == 3  # as the engine itself reports it
    assert FakeAdapter.Options().token_period != 3  # not the default: the scenario's value got through


@pytest.mark.parametrize("given, period", [({}, 7), ({"token_period": "5"}, 5)])
def test_options_are_validated_with_their_defaults(given, period):
    assert FakeAdapter.Options.model_validate(given).token_period == period
