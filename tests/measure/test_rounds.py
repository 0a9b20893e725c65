from __future__ import annotations

import pytest

from harness.adapters.trace import GenerationTrace
from harness.measure.rounds import Round, Stopping, run_rounds, summarize

MS = 1_000_000  # ns


def trace(ttft_ms: float, gaps_ms: list[float], prompt_tokens=10, batch=1) -> GenerationTrace:
    times, now = [], 1_000 * MS
    start = now
    now += int(ttft_ms * MS)
    times.append(now)
    for gap in gaps_ms:
        now += int(gap * MS)
        times.append(now)
    return GenerationTrace(start_ns=start, token_ns=times, prompt_tokens=prompt_tokens, batch_size=batch)


def test_round_from_trace_splits_ttft_and_gaps():
    r = Round.from_trace(trace(100, [10, 20, 30]), prompt_index=1)
    assert r.ttft_s == pytest.approx(0.1)
    assert r.gaps_s == pytest.approx((0.01, 0.02, 0.03))
    assert r.e2e_s == pytest.approx(0.16)
    assert r.n_generated == 4


def test_summarize_follows_the_field_definitions():
    rounds = [
        Round.from_trace(trace(100, [10, 10, 10], prompt_tokens=20, batch=2), 0),
        Round.from_trace(trace(200, [20, 20, 20], prompt_tokens=20, batch=2), 1),
        Round.from_trace(trace(300, [30, 30, 30], prompt_tokens=20, batch=2), 0),
    ]
    m = summarize(rounds)
    assert m["ttft_ms"] == pytest.approx(200)  # median over rounds
    assert m["tpot_ms"] == pytest.approx(20)  # median of (e2e - ttft) / (n - 1)
    assert m["ms_per_token_mean"] == pytest.approx(20)
    assert m["ms_per_token_p50"] == pytest.approx(20)
    assert m["ms_per_token_p90"] == pytest.approx(30)
    assert m["prefill_tokens_per_s"] == pytest.approx(2 * 20 / 0.2)
    assert m["decode_tokens_per_s"] == pytest.approx(2 * 3 / 0.06)
    assert m["throughput_tokens_per_s"] == pytest.approx(2 * 4 / 0.26)
    assert m["generated_tokens"] == 4 and m["rounds"] == 3


def test_single_token_generation_has_no_decode_figures():
    m = summarize([Round.from_trace(trace(50, []), 0)])
    assert m["ttft_ms"] == pytest.approx(50)
    assert m["tpot_ms"] is None and m["decode_tokens_per_s"] is None


def test_run_rounds_warms_up_then_cycles_prompts_until_min_rounds():
    calls = []

    def generate(index, new_tokens):
        calls.append(index)
        return trace(1, [1] * (new_tokens - 1))

    warmups, rounds = run_rounds(
        generate, n_prompts=2, stopping=Stopping(warmup_rounds=2, min_rounds=3), expected_tokens=3
    )
    assert len(warmups) == 2 and len(rounds) == 3
    assert calls == [0, 1, 0, 1, 0]
    assert [r.prompt_index for r in rounds] == [0, 1, 0]


def test_run_rounds_keeps_going_until_min_time(monkeypatch):
    import harness.measure.rounds as measure

    clock = iter(range(0, 1000))  # each perf_counter() call advances one second
    monkeypatch.setattr(measure.time, "perf_counter", lambda: float(next(clock)))
    _, rounds = run_rounds(lambda i, n: trace(1, [1]), 1, Stopping(warmup_rounds=0, min_rounds=1, min_time_s=5), 2)
    assert len(rounds) == 5


def test_run_rounds_stops_at_max_rounds():
    _, rounds = run_rounds(lambda i, n: trace(1, [1]), 1, Stopping(0, 1, 1e9, max_rounds=4), 2)
    assert len(rounds) == 4


def test_fewer_tokens_than_asked_is_an_error_not_a_faster_run():
    with pytest.raises(RuntimeError, match="generated 2 tokens, 5 were asked for"):
        run_rounds(lambda i, n: trace(1, [1]), 1, Stopping(0, 1), expected_tokens=5)


def test_a_warm_up_round_asks_for_its_own_length_and_is_checked_against_it():
    asked = []

    def generate(index, new_tokens):
        asked.append(new_tokens)
        return trace(1, [1] * (new_tokens - 1))

    warmups, rounds = run_rounds(generate, 1, Stopping(warmup_rounds=2, min_rounds=1), 5, warmup_tokens=2)
    assert asked == [2, 2, 5] and len(warmups) == 2 and rounds[0].n_generated == 5
    with pytest.raises(RuntimeError, match="generated 5 tokens, 2 were asked for"):  # a warm-up that ignored it
        run_rounds(lambda i, n: trace(1, [1] * 4), 1, Stopping(warmup_rounds=1, min_rounds=1), 5, warmup_tokens=2)
