"""Iterations of a pipeline recipe (`domain/iteration.py`), in the engine: the
`iteration_context` step's performer, and the tracked policy that archives an iteration
when its run ends (what it deferred and relaxed, the rungs it climbed, its gap analysis)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.errors import BadInputError
from controlroom.domain.events import DomainEvent
from controlroom.domain.iteration import (
    Iteration,
    IterationArchived,
    IterationContextStep,
    iteration_id,
    target_of,
)
from controlroom.domain.ladder import PASSED_OVER, TriageDecided, rung_of
from controlroom.domain.outcomes import EventSpec, StepOutcome
from controlroom.domain.run import Run, RunStatus, StepInstance
from controlroom.domain.run_events import RunCancelled, RunCompleted, RunFailed, SlotWritten
from controlroom.domain.steps import StepSpec
from controlroom.engine.policies import Unit

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution

#: How much of a gap analysis the archive and the next iteration keep.
MAX_GAP_CHARS = 20_000


def target_of_run(run: Run) -> str | None:
    recipe = run.recipe
    if recipe is None or recipe.iteration is None:
        return None
    return target_of(recipe.recipe_id, recipe.iteration.key_args, run.task.args)


def iteration_record(run: Run) -> dict[str, Any]:
    """What a run deferred and relaxed, and the rungs it climbed, from its own events."""
    deferred: list[dict[str, Any]] = []
    relaxed: list[dict[str, Any]] = []
    triages = [
        t for records in run.journal.values() for t in records if isinstance(t, TriageDecided)
    ]
    notes = {t.step_id: t for t in triages if t.decision == "DEFER"}
    for decision in run.decisions:
        rung = rung_of(decision)
        if rung.get("kind") != "deferred":
            continue
        subject = str(rung.get("subject"))
        if rung.get("failure") == PASSED_OVER and deferred:
            # A step passed over for a deferred step's slot: part of that deferral.
            skipped = [*deferred[-1]["skipped"], *rung.get("skipped", [])]
            deferred[-1]["skipped"] = list(dict.fromkeys(skipped))
            continue
        triage = notes.get(subject)
        deferred.append(
            {
                "step_id": subject,
                "reason": triage.reason if triage else str(rung.get("failure", "")),
                "note": triage.note if triage else "",
                "skipped": list(rung.get("skipped", [])),
            }
        )
    for triage in triages:
        if triage.decision == "RELAX":
            relaxed.append(
                {
                    "step_id": triage.step_id,
                    "constraint": triage.constraint,
                    "relaxation": triage.relaxation,
                    "confidence": triage.confidence,
                }
            )
    rungs = Counter(str(rung_of(d).get("kind")) for d in run.decisions if d.rung)
    return {"deferred": deferred, "relaxed": relaxed, "rungs": dict(sorted(rungs.items()))}


def archived_summary(archived: IterationArchived | None) -> dict[str, Any] | None:
    if archived is None:
        return None
    return {
        "number": archived.number,
        "run_id": archived.run_id,
        "result": archived.result,
        "deferred": archived.deferred,
        "relaxed": archived.relaxed,
        "gap_analysis": archived.gap_analysis,
        "rungs": archived.rungs,
    }


@dataclass(frozen=True)
class ContextOutcome(StepOutcome):
    text: str
    output_sha256: str
    input_slot_refs: list[str] = field(default_factory=list)

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        slot = {
            "slot": step.output_slot,
            "kind": "artifact",
            "agent_id": "iterations",
            "text": self.text,
            "sha256": self.output_sha256,
            "summary": preview(self.text),
        }
        return [(SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.text


async def perform_iteration_context(execution: Execution, instance: StepInstance) -> StepOutcome:
    step = instance.step
    assert isinstance(step, IterationContextStep)
    run = execution.run
    target = target_of_run(run)
    if target is None:
        raise BadInputError(
            f"step '{step.step_id}' (iteration_context) needs a recipe with an `iteration` block"
        )
    iteration = execution.ctx.store.load(Iteration, iteration_id(target))
    iteration = iteration or Iteration.for_target(target)
    number = iteration.number_of(run.id)
    if step.mode == "previous":
        data: dict[str, Any] = {
            "target": target,
            "iteration": number,
            "previous": archived_summary(iteration.previous_to(run.id)),
        }
    else:
        data = {"target": target, "iteration": number, **iteration_record(run)}
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return ContextOutcome(text, sha256_text(text))


_RESULTS = {RunStatus.DONE: "done", RunStatus.FAILED: "failed", RunStatus.CANCELLED: "cancelled"}


class IterationArchivePolicy:
    """A pipeline run ended: its iteration is archived on its target, exactly once per
    ending (a retried run that ends again is archived again under its number)."""

    name = "policy.iteration_archive"
    follows = frozenset({RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None or not run.is_finished:
            return
        target = target_of_run(run)
        if target is None:
            return
        iteration = unit.get(Iteration, iteration_id(target)) or Iteration.for_target(target)
        spec = run.recipe.iteration
        gap = run.slot_texts.get(spec.gap_slot) if spec and spec.gap_slot else None
        result = "partial" if run.outcome == 12 else _RESULTS.get(run.status, "failed")
        if iteration.archive(
            event.timestamp,
            recipe_id=run.recipe.recipe_id,
            run_id=run.id,
            result=result,
            outcome=run.outcome,
            gap_analysis=gap[:MAX_GAP_CHARS] if gap else None,
            **iteration_record(run),
        ):
            unit.add(iteration)
