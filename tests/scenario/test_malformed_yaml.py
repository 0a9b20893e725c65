"""Hostile scenario files: each is refused with one line naming the file and line, exit 2, no traceback.

Each test first shows that the same file without the hostile part passes ``harness check``, so the
refusal comes from the hostile part and from nothing else.
"""

from __future__ import annotations

import pytest
import yaml

from harness import cli
from harness.errors import ScenarioErrors
from harness.scenario import yaml_load

VALID = """\
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 4}
sweep:
  adapter: [hf]
  device: [cpu]
"""


def check(path, capsys) -> tuple[int, str]:
    """``harness check PATH``: (exit code, its one line of error output)."""
    code = cli.main(["check", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") <= 1, err  # one line
    return code, err.strip()


def write(tmp_path, data: bytes | str, name="scenario.yaml"):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_the_valid_file_passes(tmp_path, capsys):
    assert cli.main(["check", str(write(tmp_path, VALID))]) == 0


def test_a_file_that_is_not_utf8_is_refused_naming_file_line_and_byte(tmp_path, capsys):
    latin1 = VALID.replace('"The river"', '"Café au lait"').encode("latin-1")
    path = write(tmp_path, latin1)
    offset = latin1.index(b"\xe9")
    assert check(path, capsys) == (
        2,
        f"ERROR {path}:2: not UTF-8: byte 0xe9 at byte offset {offset}; save the file as UTF-8",
    )


def test_run_refuses_a_non_utf8_file_before_anything_runs(tmp_path, capsys):
    path = write(tmp_path, b"\xff\xfe" + VALID.encode("utf-16-le"))  # UTF-16, as some editors save
    code = cli.main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"ERROR {path}:1: not UTF-8: byte 0xff at byte offset 0")
    assert "Traceback" not in err and not (tmp_path / "results").exists()


def test_a_utf8_byte_order_mark_is_fine(tmp_path, capsys):
    assert cli.main(["check", str(write(tmp_path, b"\xef\xbb\xbf" + VALID.encode()))]) == 0


def test_duplicate_keys_are_refused_naming_both_lines(tmp_path, capsys):
    path = write(tmp_path, VALID + "  adapter: [openvino]\n")
    assert check(path, capsys) == (
        2,
        f"ERROR {path}:7: sweep.adapter: duplicate key (first on line 5); YAML would silently keep the last",
    )


@pytest.mark.parametrize(
    "text, line, field",
    [
        ("quantization_options: {ratio: 1, ratio: 0.5}\n", 7, "quantization_options.ratio"),  # flow style
        ("model: tiny-llama\n", 7, "model"),  # top level
        ("adapter_options:\n  hf: {a: 1}\n  hf: {b: 2}\n", 9, "adapter_options.hf"),
    ],
)
def test_duplicate_keys_anywhere(tmp_path, capsys, text, line, field):
    path = write(tmp_path, VALID + text)
    code, err = check(path, capsys)
    assert code == 2 and err.startswith(f"ERROR {path}:{line}: {field}: duplicate key (first on line")


BILLION_LAUGHS = VALID.replace(
    "sweep:",
    """\
adapter_options:
  hf:
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
sweep:""",
)


def test_an_alias_bomb_is_refused_at_its_first_anchor(tmp_path, capsys):
    path = write(tmp_path, BILLION_LAUGHS)  # 9**9 strings once expanded, and the record would copy them
    assert check(path, capsys) == (
        2,
        f"ERROR {path}:6: adapter_options.hf.a: YAML anchors and aliases are "
        "not allowed in scenario files (found anchor &a); write the value out",
    )


def test_a_merge_key_alias_is_refused_too(tmp_path, capsys):
    text = "base: &base {max_new_tokens: 4}\n" + VALID.replace("{max_new_tokens: 4}", "{<<: *base}")
    code, err = check(write(tmp_path, text), capsys)
    assert code == 2 and "found anchor &base" in err
    with pytest.raises(ScenarioErrors, match=r"x.yaml:2: b: .*found alias \*base"):
        yaml_load.compose("a: 1\nb: *base\n", "x.yaml")  # an alias without its anchor: refused, same words


def test_a_file_over_the_size_limit_is_refused_without_reading_it_all(tmp_path, capsys):
    path = write(tmp_path, VALID + "description: " + "x" * yaml_load.MAX_BYTES + "\n")
    assert check(path, capsys) == (
        2,
        f"ERROR {path}: file is larger than 1024 KiB; scenario files are small "
        "(put long prompt lists in a prompt file)",
    )


def test_a_device_file_is_refused_without_reading_it(capsys):
    code, err = check("/dev/zero", capsys)  # endless: refused as a device before any read
    assert code == 2 and "not a regular file" in err


def test_too_deep_nesting_is_refused(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000  # recursion in the composer would end in a traceback
    path = write(tmp_path, VALID.replace("sweep:", f"adapter_options: {{hf: {{x: {deep}}}}}\nsweep:"))
    assert check(path, capsys) == (2, f"ERROR {path}:4: nested deeper than {yaml_load.MAX_DEPTH} levels")


def test_too_many_values_are_refused(tmp_path, capsys):
    many = ", ".join(["1"] * (yaml_load.MAX_NODES + 1))  # well under the size limit
    path = write(tmp_path, VALID.replace("sweep:", f"exclude: [{many}]\nsweep:"))
    code, err = check(path, capsys)
    assert code == 2 and err.startswith(f"ERROR {path}:4: exclude.")
    assert err.endswith(f"more than {yaml_load.MAX_NODES:,} YAML values; scenario files are small")


@pytest.mark.parametrize(
    "value, message",
    [
        ("2024-13-01", "cannot read '2024-13-01': month must be in 1..12"),  # a timestamp PyYAML cannot build
        ("9" * 5000, "Exceeds the limit (4300 digits) for integer string conversion"),
    ],
)
def test_values_yaml_cannot_build_are_refused_with_their_line(tmp_path, capsys, value, message):
    path = write(tmp_path, VALID.replace("sweep:", f"adapter_options:\n  hf:\n    x: {value}\nsweep:"))
    code, err = check(path, capsys)
    assert code == 2 and err.startswith(f"ERROR {path}:6: ") and message in err


def test_control_characters_and_python_tags_are_refused_with_their_line(tmp_path, capsys):
    code, err = check(write(tmp_path, VALID + "description: \x07\n"), capsys)
    assert code == 2 and ":7: invalid YAML: control characters are not allowed" in err
    code, err = check(write(tmp_path, VALID + "description: !!python/object/apply:os.system [ls]\n"), capsys)
    assert code == 2 and ":7: invalid YAML: could not determine a constructor" in err


def test_the_loader_gives_the_same_data_and_line_numbers_as_pyyaml():
    text = VALID + "exclude:\n  - {device: npu}\nmarkers: [nightly, 'x: y']\ndescription: |\n  two\n  lines\n"
    root, data = yaml_load.compose(text, "x.yaml")
    assert data == yaml.safe_load(text)
    assert _lines(root) == _lines(yaml.compose(text, Loader=yaml.SafeLoader))
    assert yaml_load.compose("", "x.yaml") == (None, None)


def _lines(node):
    if isinstance(node, yaml.ScalarNode):
        return [(node.value, node.start_mark.line)]
    children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
    return [(node.tag, node.start_mark.line), *(line for child in children for line in _lines(child))]
