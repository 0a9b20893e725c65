"""A worker parses its first point's tokenizer while it imports its engine (``worker_prefetch``): once, in
the prefetching thread, and the point's own call finds it parsed."""

from __future__ import annotations

import threading

from harness.io import per_file
from harness.models import sources
from harness.run import planning
from harness.run.launchers import worker_prefetch
from tests.tiny_scenario import tiny


def counting_parses(monkeypatch) -> list[str]:
    threads: list[str] = []

    def parse(path):
        threads.append(threading.current_thread().name)
        return sources._read_tokenizer(path)

    monkeypatch.setattr(sources, "_tokenizer", per_file(parse))
    return threads


def test_the_first_points_tokenizer_is_parsed_once_beside_the_import(monkeypatch, tiny_llama, cache_dir):
    parses = counting_parses(monkeypatch)
    scenario = planning.loads(tiny(sweep={"adapter": ["hf"]}))
    thread = worker_prefetch.start(scenario, cache_dir)
    thread.join()
    assert parses == ["harness-tokenizer"]
    assert sources.resolve(scenario.model, cache_dir).tokenizer().get_vocab_size() > 0
    assert parses == ["harness-tokenizer"]  # the point's own call: parsed already


def test_a_model_not_in_the_cache_is_left_to_the_point(monkeypatch, tmp_path):
    parses = counting_parses(monkeypatch)
    scenario = planning.loads(tiny(sweep={"adapter": ["hf"]}))
    worker_prefetch.start(scenario, tmp_path).join()
    assert parses == [] and not list(tmp_path.rglob("config.json"))
    assert worker_prefetch.start(None, tmp_path) is None
