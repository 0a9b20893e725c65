"""Where the installed plugin collects scenario files: only where the user points pytest.

A YAML file named on the command line is a scenario. Under a folder named on the command line, or
matching the ``harness_scenarios`` ini option, a YAML with a top-level ``sweep:`` key is one; other
YAML there is passed over. Nothing else is collected, whatever its folder is called.
"""

from __future__ import annotations

import pytest

SCENARIO = """\
model: tiny-llama
generation: {max_new_tokens: 4}
sweep:
  adapter: [hf]
  max_seq_len: [64, 128]
"""
POINTS = ("hf-cpu-bf16-seq64", "hf-cpu-bf16-seq128")


def put(pytester, relpath: str, text: str | bytes):
    path = pytester.path / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def collected(pytester, *args) -> tuple[pytest.RunResult, list[str]]:
    """Run collection only (nothing is measured): the result and the collected test ids."""
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", *args)
    ids = [line for line in result.outlines if "::" in line]
    return result, ids


def test_a_project_that_did_not_ask_collects_no_scenarios(pytester):
    # regression: any folder named "scenarios" in any project was collected once the plugin was installed
    put(pytester, "scenarios/sweep.yaml", SCENARIO)
    put(pytester, "tests/scenarios/data.yaml", SCENARIO)
    pytester.makepyfile(test_plain="def test_ok(): pass")
    result, ids = collected(pytester)
    assert ids == ["test_plain.py::test_ok"], result.stdout.str()
    assert result.ret == pytest.ExitCode.OK


def test_the_ini_option_names_folders_files_and_globs(pytester):
    put(pytester, "bench/nightly.yaml", SCENARIO)  # a folder with any name
    put(pytester, "bench/deeper/weekly.yaml", SCENARIO)  # under the folder: collected too
    put(pytester, "perf/a.yaml", SCENARIO)
    put(pytester, "perf/b.yml", SCENARIO)  # not matched by the glob below
    put(pytester, "one/only.yaml", SCENARIO)
    put(pytester, "one/other.yaml", SCENARIO)  # next to the named file, not named
    pytester.makeini("[pytest]\nharness_scenarios = bench perf/*.yaml one/only.yaml\n")
    result, ids = collected(pytester)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    files = sorted({i.split("::")[0] for i in ids})
    assert files == ["bench/deeper/weekly.yaml", "bench/nightly.yaml", "one/only.yaml", "perf/a.yaml"]
    assert len(ids) == len(files) * len(POINTS)


def test_a_folder_named_on_the_command_line_is_searched(pytester):
    put(pytester, "nightly/quick.yaml", SCENARIO)
    result, ids = collected(pytester, "nightly")
    assert sorted(ids) == sorted(f"nightly/quick.yaml::{p}" for p in POINTS), result.stdout.str()


NOT_SCENARIOS = {
    "defaults.yaml": "threads: 4\nmodel: tiny-llama\n",  # a mapping without sweep
    "list.yaml": "- a\n- b\n",  # not a mapping
    "empty.yml": "",
    "broken.yaml": "a: [1, 2\n",  # not even YAML
    "latin1.yaml": "name: caf\xe9\n".encode("latin-1"),
    "ci.yaml": "jobs:\n  bench:\n    sweep: nightly\n",  # sweep, but not at the top level
}


@pytest.mark.parametrize("how", ["command line", "ini"])
def test_yaml_that_is_not_a_scenario_is_passed_over(pytester, how):
    put(pytester, "scenarios/sweep.yaml", SCENARIO)
    for name, text in NOT_SCENARIOS.items():
        put(pytester, f"scenarios/{name}", text)
    put(pytester, "scenarios/huge.yaml", "sweep: x\n" + "a: 1\n" * 300_000)  # over the size limit: data
    if how == "ini":
        pytester.makeini("[pytest]\nharness_scenarios = scenarios\n")
    result, ids = collected(pytester, *(["scenarios/"] if how == "command line" else []))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert sorted(ids) == sorted(f"scenarios/sweep.yaml::{p}" for p in POINTS)
    assert "error" not in result.stdout.str().lower()


@pytest.mark.parametrize("how", ["command line", "ini"])
def test_a_broken_scenario_is_still_a_collection_error_naming_file_line_and_field(pytester, how):
    put(pytester, "bench/broken.yaml", SCENARIO.replace("[64, 128]", "[64, lots]"))
    put(pytester, "bench/unclosed.yaml", SCENARIO + "description: [\n")  # a scenario whose YAML is broken
    if how == "ini":
        pytester.makeini("[pytest]\nharness_scenarios = bench\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *(["bench"] if how == "command line" else []))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*bench/broken.yaml:5: sweep.max_seq_len.1: *", "*bench/unclosed.yaml:*: invalid YAML: *"]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_yaml_file_named_on_the_command_line_is_loaded_as_a_scenario(pytester):
    put(pytester, "config.yaml", "not: a scenario\n")  # named explicitly: say why it is not one
    result = pytester.runpytest("config.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*config.yaml:1: sweep: required field is missing*"])
    put(pytester, "elsewhere/quick.yaml", SCENARIO)
    _, ids = collected(pytester, "elsewhere/quick.yaml::hf-cpu-bf16-seq64")
    assert ids == ["elsewhere/quick.yaml::hf-cpu-bf16-seq64"]
