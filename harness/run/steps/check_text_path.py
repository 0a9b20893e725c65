"""The engine's own text path and batch invariance (``harness.correctness.text_path``, ``.batch``), after the
gate on the same loaded engine: ``correctness.text_path`` records which checks ran and how they came out
(or why each could not run); a failed check fails the point, and the diagnosis names its input ids or the
failed checks (``harness.correctness.check_diagnosis``)."""

from __future__ import annotations

from typing import Optional

from harness.adapters.base import Adapter
from harness.models import prompts
from harness.records.correctness import Correctness
from harness.records.gate_verdicts import FAIL, NOT_JUDGED, TEXT_PATH
from harness.records.text_path import TextPath
from harness.run.steps.contribution import Contribution
from harness.run.steps.launch_context import LaunchContext
from harness.run.steps.resolve import ResolvedPoint


def batch_prompts(resolved: ResolvedPoint) -> list[list[int]]:
    """``batch_size`` distinct prompts (timing repeats one prompt, which would hide sequences mixed up
    inside a batch) of different lengths, from the point's prompt length down (``batch.lengths``): the
    shorter ones padded in the batch."""
    from harness.correctness.batch import lengths

    sizes = lengths(len(resolved.prompt_ids[0]), resolved.point.batch_size)
    made = prompts.synthetic(resolved.tokenizer, sizes[0], resolved.point.batch_size)
    return [ids[:size] for ids, size in zip(made, sizes)]


def check_text_path(
    ctx: LaunchContext, resolved: ResolvedPoint, adapter: Adapter, reference, correctness: Optional[Correctness]
) -> Contribution:
    from harness.correctness import batch, check_diagnosis, text_path, vocabulary

    if correctness is None or reference is None or correctness.skipped:
        return Contribution()
    point, tokenizer = resolved.point, resolved.tokenizer
    ctx.on_phase(f"{point.id}: text path")
    template = prompts.chat_template(resolved.model.hf_dir)
    texts = prompts.tokenizer_corpus() + [p.text for p in reference.prompts]
    arbiter, metadata = vocabulary.arbiter(adapter, resolved.model)
    path = TextPath(
        tokenizer=text_path.tokenizer_agreement(adapter, tokenizer, texts, arbiter, metadata),
        chat_template=text_path.chat_template(adapter, template, tokenizer),
        free_text=text_path.free_text(adapter, reference, tokenizer, template, resolved.scenario.gate.k),
        batch=batch.check(adapter, batch_prompts(resolved), correctness.noise_floor),
    )
    update: dict = {"text_path": path}
    failed = text_path.reasons(path)
    if failed:
        update["verdict"] = "fail"
        update["failed_by"] = [*(correctness.failed_by if correctness.verdict == FAIL else []), TEXT_PATH]
        unjudged = correctness.verdict == NOT_JUDGED  # its reason becomes a note, as beside a top-k failure
        update["reasons"] = [*([] if unjudged else correctness.reasons), *failed]
        update["notes"] = [*correctness.reasons, *correctness.notes] if unjudged else correctness.notes
        update["report"] = "\n".join(filter(None, [correctness.report, *failed, text_path.format_report(path)]))
        engine_ids = text_path.input_ids_of(adapter, reference, template)
        found, line = check_diagnosis.of_failed_checks(correctness.diagnosis, path.failed(), engine_ids, reference)
        update["diagnosis"] = found
        if line:
            update["report"] += f"\n{line}"
    return Contribution(updates={"correctness": correctness.model_copy(update=update)})
