"""The diagnosis of a failure in a check beside the gate (the text path's tokenizer, chat template, free-running
text and batch checks; the stopping check), which the gate's layers cannot see: the gate feeds the reference's
ids one position at a time. The engine's own input ids of every gate prompt are compared with the reference's
(``diagnosis.compare_input_ids``); where one differs the diagnosis names ``input ids``, and otherwise it names
the failed checks themselves (``Diagnosis.failed_checks``), so a tokenizer that only splits strings the gate's
prompts lack is named as the tokenizer. A diagnosis the gate's own failure already made keeps its finding and
gains the failed checks. Pure over the records and the engine's ids."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from harness.correctness.diagnosis import compare_input_ids
from harness.correctness.stored_reference import Reference
from harness.records.gate_diagnosis import Diagnosis

# Each check's name in the record (``TextPath.checks``, and ``stopping``) and where its fault lies, in words.
WHERE = {
    "tokenizer": "the tokenizer",
    "chat_template": "the chat template",
    "free_text": "the detokenizer or text API (free-running text)",
    "batch": "the batch (padding or mixed sequences)",
    "stopping": "stopping (EOS / end of turn)",
}


def not_run_reason(failed: Sequence[str], ids_compared: bool = True) -> str:
    named = ", ".join(WHERE.get(name, name) for name in failed)
    ids = (
        "the engine's input ids agree with the reference's on every gate prompt"
        if ids_compared
        else "the engine has no tokenizer of its own: it was fed the reference's ids"
    )
    checks = "checks" if len(failed) > 1 else "check"
    return f"the gate passed and {ids}: the fault lies where the failed {checks} looked: {named}"


def of_failed_checks(
    existing: Optional[Diagnosis],
    failed: Sequence[str],
    engine_ids: Optional[Callable[[int], list[int]]],
    reference: Reference,
) -> tuple[Diagnosis, Optional[str]]:
    """(the point's diagnosis once ``failed`` checks failed, the report's line or None). ``existing``: the
    diagnosis so far (None: the gate passed and no check failed before)."""
    if existing is not None:
        names = [*existing.failed_checks, *(n for n in failed if n not in existing.failed_checks)]
        update: dict = {"failed_checks": names}
        if existing.departs_at is None and existing.failed_checks:  # made here before: name every failed check
            ids_compared = existing.input_ids is None or existing.input_ids.agree is not None
            update["not_run"] = not_run_reason(names, ids_compared)
            return existing.model_copy(update=update), f"diagnosis: {update['not_run']}"
        return existing.model_copy(update=update), None
    compared = [compare_input_ids(engine_ids, reference, i) for i in range(len(reference.prompts))]
    bad = next((ids for ids in compared if ids.agree is False), None)
    if bad is not None:
        found = Diagnosis(prompt=bad.prompt, departs_at="input ids", input_ids=bad, failed_checks=list(failed))
        return found, f"diagnosis: input ids depart from the reference's (prompt {found.prompt})"
    first = compared[0] if compared else None
    found = Diagnosis(
        not_run=not_run_reason(failed, first is None or first.agree is not None),
        input_ids=first,
        failed_checks=list(failed),
    )
    return found, f"diagnosis: {found.not_run}"
