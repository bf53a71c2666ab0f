"""The `chief_review` step: the Chief reviews a finished plan task against its DoD.

Its slot is the review (`decision`, `notes`, `dod_passed`); its events record every reply
the Chief gave (`ModelCalled`), and every failed attempt as it happens (`ModelAttemptFailed`,
committed at once, kept whether the review then succeeds or not). A review that fails (the Chief's
server after the transport retries, or replies that are not a review) fails the step, and
the run; the plan records either outcome (`ReviewOutcomePolicy`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.errors import BadInputError
from controlroom.domain.model_calls import ModelCalled, model_called_fields
from controlroom.domain.outcomes import EventSpec, StepOutcome
from controlroom.domain.plan import SessionPlan
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.run_events import SlotWritten
from controlroom.domain.steps import ChiefReviewStep, StepSpec
from controlroom.engine.chief import Chief
from controlroom.engine.plans import result_text

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


@dataclass(frozen=True)
class ReviewOutcome(StepOutcome):
    text: str
    output_sha256: str
    calls: list[dict[str, Any]]
    input_slot_refs: list[str] = field(default_factory=list)

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        calls: list[EventSpec] = [(ModelCalled, model_called_fields(c)) for c in self.calls]
        slot = {
            "slot": step.output_slot,
            "kind": "artifact",
            "agent_id": "chief",
            "text": self.text,
            "sha256": self.output_sha256,
            "summary": preview(self.text),
        }
        return [*calls, (SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.text


async def perform_chief_review(execution: Execution, instance: StepInstance) -> ReviewOutcome:
    assert isinstance(instance.step, ChiefReviewStep)
    ctx, args = execution.ctx, execution.run.task.args
    plan = ctx.store.load(SessionPlan, str(args.get("plan_id")))
    task_id = args.get("task_id")
    if plan is None or not isinstance(task_id, int) or task_id not in plan.tasks:
        raise BadInputError(f"no plan task to review: {args.get('plan_id')} task {task_id}")
    task = plan.tasks[task_id]
    passed = plan.outcomes.get(task_id) == "done"
    task_run = ctx.store.load(Run, plan.run_ids[task_id]) if task_id in plan.run_ids else None
    review = await Chief(ctx).review(
        task.description, task.dod, result_text(task_run, passed), execution.record_attempt
    )
    calls = [{**call, "task_id": task_id} for call in review.calls]
    text = json.dumps(
        {"decision": review.decision, "notes": review.notes, "dod_passed": passed}, indent=2
    )
    return ReviewOutcome(text, sha256_text(text), calls)
