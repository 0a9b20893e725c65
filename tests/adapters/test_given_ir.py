"""An OpenVINO IR folder the user already has (``model.artefacts.openvino``) runs as it is through ``harness run``:
nothing is exported, the record names the folder and its sha256, and the gate compares it with the HF reference
of the checkpoint ``model.source`` names."""

from __future__ import annotations

import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.models import artefacts
from harness.records.store import iter_records
from harness.scenario.schema import ModelSpec

pytestmark = pytest.mark.skipif(
    not all(find_spec(m) for m in ("openvino_genai", "optimum", "transformers")), reason="the openvino extra is missing"
)

SCENARIO = """
model:
  source: tiny-llama
  artefacts: {{openvino: {ir}}}
prompts: ["The river"]
generation: {{max_new_tokens: 4}}
measurement: {{warmup_rounds: 0, min_rounds: 1, threads: 2}}
gate: {{k: 5, tokens: 8, prompts: ci}}
sweep:
  adapter: [openvino]
  device: [CPU]
"""


@pytest.fixture(scope="session")
def user_ir(tiny_llama, cache_dir, tmp_path_factory) -> Path:
    """tiny-llama exported by optimum-intel (the project's export, cached), copied out of the cache: the user's IR."""
    from harness.adapters.openvino import ir_export

    exported = ir_export.artefact(tiny_llama, "none", {}, cache_dir)
    return Path(shutil.copytree(exported, tmp_path_factory.mktemp("user") / "tiny-llama-ov"))


def test_a_users_ir_runs_as_is_and_the_record_names_it(write_scenario, tmp_path, user_ir):
    path = write_scenario(SCENARIO.format(ir=user_ir))
    options = ["--results", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    options += ["--reference-dir", str(tmp_path / "references"), "--isolation", "none", "--no-energy"]
    code = cli_main(["run", str(path), *options])
    (record,) = [record for _, record in iter_records(tmp_path / "results")]
    assert code == 0 and record.status == "ok", record.reason
    assert record.correctness.verdict == "pass", record.correctness.reasons
    given = artefacts.given(ModelSpec(source="tiny-llama", artefacts={"openvino": str(user_ir)}), "openvino")
    assert record.engine.extra["artefact"] == {
        "artefact": "given by the user",
        "path": str(user_ir),
        "sha256": given.sha256,
    }
    exported = [p.name for p in (tmp_path / "cache" / "openvino").iterdir() if p.name.startswith("tiny-llama")]
    assert exported == []  # the harness exported nothing
