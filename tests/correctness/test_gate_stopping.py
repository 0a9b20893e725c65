"""Stopping is gated (issue #39): the gate's prompts and the shipped stop prompts run through the engine's own
stopping (``Adapter.generate_until_stop``), never a forced length, and its stops are judged against the
reference's. A tiny chat model whose EOS is a token it emits early makes a reference that stops well inside
the budget; an engine whose generation ignores EOS fails, as does one that suppresses it; the clean engine passes."""

from __future__ import annotations

import json
import shutil

import pytest

from harness import cli
from harness.correctness import stopping
from harness.correctness.own_stopping import OwnStopping
from harness.correctness.stored_reference import PromptReference
from harness.models import prompts
from harness.records import store
from tests.conftest import registered
from tests.faults import HFAdapter


class IgnoresEOS(HFAdapter):
    """Generation that emits its EOS and goes on to the budget (a text API without its stop check)."""

    name = "hf-ignores-eos"

    def generate_until_stop(self, prompt_ids, max_new_tokens):
        self._stop_ids = []  # no stop id: generate runs to max_new_tokens whatever it emits
        return super().generate_until_stop(prompt_ids, max_new_tokens)


class SuppressesEOS(HFAdapter):
    """Generation that never emits its EOS (a forced minimum length where none was asked)."""

    name = "hf-suppresses-eos"

    def generate_until_stop(self, prompt_ids, max_new_tokens):
        return self.generate([prompt_ids], max_new_tokens).output_ids[0]


@pytest.fixture(scope="module")
def stopping_model(chat_model, tmp_path_factory):
    """tiny-llama-chat whose EOS is the third token its reference generates for the first stop prompt."""
    from harness.correctness.logprobs import greedy_steps
    from harness.correctness.reference import encode, hf_engine
    from harness.models import sources
    from harness.scenario.schema import ModelSpec

    model = sources.resolve(ModelSpec(source=str(chat_model)))
    pairs = prompts.stop_prompts()[:1]
    [ids] = encode(model.tokenizer(), model.hf_dir, pairs, None)
    with hf_engine(model, "bf16", 2) as engine:
        tokens = greedy_steps(engine, ids, 4, [], 1)[0]
    path = tmp_path_factory.mktemp("model") / "tiny-llama-stops"
    shutil.copytree(chat_model, path, ignore=shutil.ignore_patterns("harness-*"))
    for name in ("config.json", "generation_config.json"):
        config = json.loads((path / name).read_text())
        config["eos_token_id"] = tokens[2]
        (path / name).write_text(json.dumps(config))
    return path


SCENARIO = """
model: MODEL
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 32, prompts: 2}
sweep:
  adapter: [hf, hf-ignores-eos, hf-suppresses-eos]
"""


@pytest.fixture
def stop_faults():
    yield from registered([IgnoresEOS, SuppressesEOS])


def test_an_engine_that_ignores_eos_fails_and_the_clean_engine_passes_through_harness_verify(
    write_scenario, tmp_path, stopping_model, stop_faults
):
    path = write_scenario(SCENARIO.replace("MODEL", str(stopping_model)))
    references = tmp_path / "references"
    argv = ["verify", str(path), "--results", str(tmp_path), "--reference-dir", str(references)]
    assert cli.main([*argv, "--isolation", "none"]) == 1
    (stops,) = [r for r in _stored(references) if r.prompts[0].kind == prompts.DIALOGUE]
    # What the stopping check reads (greedy tokens, top-M) and nothing it does not: no fp32 noise floor, no
    # prefill positions, each a second pass over every stop prompt.
    assert stops.settings["floor_dtype"] is None and "kl_mean" not in stops.noise_floor
    assert all(p.tokens and p.top_ids and not p.prefill_top_ids for p in stops.prompts)
    records = {record.point_id: record.correctness for _, record in store.iter_records(tmp_path / "scenario")}
    clean, ignores, suppresses = (records[f"{a}-cpu-bf16"] for a in ("hf", "hf-ignores-eos", "hf-suppresses-eos"))
    assert clean.stopping.stopping >= 1, clean.stopping  # the reference stops early on at least one prompt
    assert clean.verdict == "pass" and clean.stopping.verdict == "pass", clean.reasons
    # a stop prompt whose reference runs to the budget is listed as not run, never recorded as a stop judged
    ran = {p.prompt for p in clean.stopping.prompts if p.source == "stop"}
    assert 0 in ran and ran | set(clean.stopping.unended) == set(range(len(prompts.stop_prompts()))), clean.stopping
    assert all(p.reference_stops for p in clean.stopping.prompts if p.source == "stop"), clean.stopping
    for broken in (ignores, suppresses):  # every greedy check passes them: only the stops differ
        assert broken.verdict == "fail" and broken.stopping.verdict == "fail", broken.stopping
        assert all(r.startswith("stopping:") for r in broken.reasons), broken.reasons
        # the layers cannot see it: the diagnosis names the failed check (before: no diagnosis)
        assert broken.diagnosis.failed_checks == ["stopping"], broken.diagnosis
        assert broken.diagnosis.not_run.endswith("looked: stopping (EOS / end of turn)"), broken.diagnosis
    assert any("went on" in p.why for p in ignores.stopping.prompts if p.why)
    for broken in (ignores, suppresses):  # where the reference stops early, 3x the length band's upper line
        early = [p for p in broken.stopping.prompts if p.reference_stops and p.reference_tokens <= 16]
        assert early and all(p.why for p in early), early
        line = max(2 * p.reference_tokens + 4 for p in early)
        print(f"{broken.stopping.prompts[0]}: {[(p.reference_tokens, p.device_tokens) for p in early]}, line {line}")
        assert min(p.device_tokens for p in early) >= 3 * line, early  # 3x the band's upper edge, 2x + 4


def _stored(references):
    """Every reference stored under ``references``."""
    from harness.correctness.stored_reference import read

    return [read(path, "stored reference") for path in sorted(references.glob("*/*.json"))]


def ref(tokens, top=None):
    return PromptReference("chat", "t", [1, 2], tokens, top or [[t, 9] for t in tokens], [[0.0, -1.0]] * len(tokens))


@pytest.mark.parametrize(
    "device, reference, why",
    [
        ([5, 6, 2], [5, 6, 2], None),  # the same stop
        ([5, 6], [5, 6, 2], None),  # an engine that drops its stop token from its output stopped all the same
        ([5, 6, 2, 7, 8, 8, 8, 8], [5, 6, 2], "went on"),  # emitted EOS and went on
        ([5, 6, 7, 7, 7, 7, 7, 7], [5, 6, 2], "did not stop"),  # EOS suppressed
        ([5, 2], [5, 6, 7, 7, 7, 7, 7, 7], "stopped after 1"),  # early, no stop in the reference's top-k there
        ([9, 9, 9, 9, 9, 9, 9, 9], [5, 2], "never stopped"),  # diverged at once, never stopped: 8x the reference
        ([9, 9, 9, 9, 9, 2], [5, 2], None),  # diverged at once, another answer that stopped by itself
        ([9, 9, 9, 9, 9, 9, 9, 9], [5, 6, 7, 7, 2], None),  # diverged, no stop, but inside the band (2 x 4 + 4)
    ],
)
def test_stops_are_judged_against_the_reference(device, reference, why):  # (unit)
    found = stopping.judge(device, ref(reference), [2], 8, 5)
    assert (found.why is None) if why is None else (found.why and why in found.why), found


def test_an_early_stop_at_a_near_tie_passes():  # (unit)
    reference = ref([5, 6, 7, 7, 7, 7, 7, 7], top=[[5, 9], [6, 2], *[[7, 9]] * 6])  # the stop is 2nd at position 1
    assert stopping.judge([5, 2], reference, [2], 8, 5).why is None


class Replays:
    """An engine's own stopping that replays given generations, and counts the prompts run through it."""

    name, supports_stopping = "replays", True

    def __init__(self, out):
        self.out, self.ran = out, []

    def generate_until_stop(self, prompt_ids, max_new_tokens):
        self.ran.append(list(prompt_ids))
        return self.out


def test_a_stop_prompt_whose_reference_never_ends_is_not_run_and_recorded_as_such():  # (unit)
    """A stop prompt is there to end: where the reference runs to the budget (the default model's on all four),
    it is listed in ``unended``, not run, not counted as a stop judged; the gate's own prompts still run, through
    the launch's generations that the text path made (``OwnStopping``), not a second time."""
    gate = [ref([5, 6, 7, 7, 7, 7, 7, 7])]  # never ends either, but a gate prompt: its early stop is judged
    ends = PromptReference("dialogue", "e", [3], [5, 2], [[5, 9], [2, 9]], [[0.0, -1.0]] * 2)
    runs_on = PromptReference("dialogue", "s", [4], [5] * 8, [[5, 9]] * 8, [[0.0, -1.0]] * 8)
    engine = Replays([5, 6, 7, 7, 7, 7, 7, 7])
    own = OwnStopping(engine)
    assert own([1, 2], 8) == engine.out  # the text path's free-running text of the gate prompt, first
    found = stopping.check(engine, gate, [runs_on, ends, runs_on], [2], 8, 5, own)
    assert found.unended == [0, 2] and [(p.source, p.prompt) for p in found.prompts] == [("gate", 0), ("stop", 1)]
    assert engine.ran == [[1, 2], [3]]  # the gate prompt once, the stop prompt that ends; nothing else
    assert found.verdict == "fail" and "did not stop" in found.prompts[1].why  # the stop prompt that ends: judged
    assert "2 stop prompts not run" in found.summary() and any("[0, 2] not run" in n for n in found.notes)
    nothing = stopping.check(Replays([5]), [], [runs_on], [2], 8, 5)  # only unended stop prompts: nothing judged
    assert nothing.skipped and nothing.verdict is None and nothing.unended == [0], nothing
