"""Sharding a sweep across machines and merging their records back."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.records import store
from harness.run import planning
from harness.run.shard import assign, merge, parse_shard, select
from harness.scenario.sweep import expand
from tests.records import record

SWEEP = """
model: tiny-llama
sweep:
  adapter: [hf, openvino]
  device: [cpu, CPU]
  quantization: [none, int8_sym, int4_sym]
  prompt_len: [16, 32]
exclude:
  - {adapter: hf, device: CPU}
  - {adapter: openvino, device: cpu}
  - {adapter: hf, quantization: int8_sym}
  - {adapter: hf, quantization: int4_sym}
"""


@pytest.fixture
def pairs():
    loaded = planning.loads(SWEEP, "<s>", "s")
    return [(loaded, p) for p in expand(loaded)]


def test_shards_partition_the_points_and_keep_model_groups_together(pairs):
    owners = assign(pairs, 3)
    shards = [select(pairs, parse_shard(f"{i}/3")) for i in (1, 2, 3)]
    ids = [p.id for shard in shards for _, p in shard]
    assert sorted(ids) == sorted(p.id for _, p in pairs) and len(ids) == len(set(ids))
    assert all(shards)  # 4 groups of 2 points over 3 shards: none is empty
    for _, point in pairs:  # both prompt lengths of one (adapter, quantization) share a shard
        sibling = (
            point.id.replace("prompt16", "prompt32")
            if "prompt16" in point.id
            else point.id.replace("prompt32", "prompt16")
        )
        assert owners[("s", point.id)] == owners[("s", sibling)]


def test_the_split_is_the_same_on_every_machine(pairs):
    assert assign(pairs, 2) == assign(list(reversed(pairs)), 2)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", ""])
def test_bad_shards_are_refused(text):
    with pytest.raises(UsageError, match="expected I/N"):
        parse_shard(text)


def test_merge_prefers_the_runner_that_ran_a_point():
    ran = record("p")
    skipped = record("p", status="skipped")
    merged, conflicts = merge([("a", skipped), ("b", ran)])
    assert conflicts == [] and [r.status for r in merged] == ["ok"]
    merged, conflicts = merge([("b", ran), ("a", skipped), ("c", ran)])
    assert conflicts == [] and len(merged) == 1


def test_merge_refuses_two_different_runs_of_one_point(tmp_path, capsys):
    from harness.cli.app import main

    store.write(record("p", seed=1), tmp_path / "a")
    store.write(record("p", seed=2), tmp_path / "b")
    store.write(record("q"), tmp_path / "b")
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "demo::p: ok in" in err and str(tmp_path / "a") in err and str(tmp_path / "b") in err
    assert not (tmp_path / "m").exists()  # nothing written


def test_merging_nothing_is_an_error(tmp_path, capsys):
    from harness.cli.app import main

    (tmp_path / "empty").mkdir()
    assert main(["merge", str(tmp_path / "empty"), "-o", str(tmp_path / "m")]) == 2
    assert "no result records under" in capsys.readouterr().err
