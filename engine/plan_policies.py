"""The reactions that run a session plan, as tracked policies.

- `PlanRunsPolicy`: a task's run was requested -> the run is started (queued: whichever
  executor or worker is free claims it). Its id is fixed by plan and task, and the policy's
  tracking moves with the new run in one transaction, so a crash never starts it twice or
  forgets it.
- `PlanProgressPolicy`: a plan task's run ended -> the task is done or failed, and the plan
  asks for the runs that became ready (or finishes).
"""

from __future__ import annotations

import hashlib

from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import DomainEvent
from controlroom.domain.issue import Issue
from controlroom.domain.plan import SessionPlan
from controlroom.domain.plan_events import TaskOutcome, TaskReviewed, TaskRunRequested
from controlroom.domain.recipe import Recipe
from controlroom.domain.run import Run
from controlroom.domain.run_events import (
    RoutingDecision,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunOrigin,
    TaskSpec,
)
from controlroom.engine.policies import Unit


class PlanRunsPolicy:
    name = "policy.plan_runs"
    follows = frozenset({TaskRunRequested.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, TaskRunRequested)
        if unit.get(Run, event.run_id) is not None:
            return  # started already (a replayed reaction, or another process)
        plan = unit.get(SessionPlan, event.originator_id)
        if plan is None or event.task_id not in plan.tasks:
            return
        task = plan.tasks[event.task_id]
        if task.recipe is None or task.recipe_id is None:
            return  # placed before recipes were kept with tasks: nothing safe to run
        recipe = Recipe.model_validate(task.recipe)
        run = Run.start(
            run_id=event.run_id,
            at=event.timestamp,
            recipe=recipe,
            task=TaskSpec(
                description=task.description,
                args=dict(task.args),
                session_plan_task_id=task.task_id,
                plan_id=plan.id,
            ),
            routing=RoutingDecision(
                routable=True,
                recipe_id=task.recipe_id,
                reason=task.routing_reason or "placed by the session plan",
                initial_args=dict(task.args),
            ),
            session_id=plan.session_id,
            trace_id="tr_" + hashlib.sha256(event.run_id.encode()).hexdigest()[:24],
            origin=RunOrigin(
                kind="plan_task", plan_id=plan.id, task_id=task.task_id, policy=self.name
            ),
        )
        unit.add(run)


class PlanProgressPolicy:
    name = "policy.plan_progress"
    follows = frozenset({RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        run = unit.get(Run, event.originator_id)
        if run is None or not run.task.plan_id:
            return
        plan = unit.get(SessionPlan, run.task.plan_id)
        if plan is None:
            return
        outcome: TaskOutcome
        if isinstance(event, RunCompleted):
            outcome, detail = "done", "the run finished and its Definition of Done passed"
        elif isinstance(event, RunFailed):
            outcome, detail = "failed", event.error
        else:
            assert isinstance(event, RunCancelled)
            outcome, detail = "failed", f"the run was cancelled: {event.reason}"
        code = getattr(event, "outcome", None)
        if plan.record_run_outcome(event.timestamp, run.id, outcome, detail, code):
            unit.add(plan)


#: The recipe of the Chief's review runs (`engine/reviews.py`).
REVIEW_RECIPE = "plan_task_review"


class ReviewOutcomePolicy:
    """A review run of a plan task ended -> the plan records the review, or the failed
    attempt (asked again after a wait, or given up at the plan's bound). Only the run of
    the task's current attempt counts, so a late duplicate changes nothing."""

    name = "policy.plan_reviews"
    follows = frozenset({RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None or run.recipe.recipe_id != REVIEW_RECIPE:
            return
        args = run.task.args
        plan_id, task_id, attempt = args.get("plan_id"), args.get("task_id"), args.get("attempt")
        if not isinstance(plan_id, str) or not isinstance(task_id, int):
            return
        plan = unit.get(SessionPlan, plan_id)
        if plan is None or task_id not in plan.unreviewed():
            return
        if attempt != len(plan.review_failures.get(task_id, [])) + 1:
            return  # not the attempt the plan is waiting for
        if isinstance(event, RunCompleted):
            review = run.slot_values.get("review")
            if not isinstance(review, dict):
                return
            plan.review(
                event.timestamp,
                task_id,
                decision=str(review.get("decision", "")),
                notes=str(review.get("notes", "")),
                dod_passed=bool(review.get("dod_passed")),
            )
        else:
            assert isinstance(event, RunFailed | RunCancelled)
            reason = event.error if isinstance(event, RunFailed) else f"cancelled: {event.reason}"
            delay = args.get("first_delay_s", 0.0)
            plan.fail_review(
                event.timestamp,
                task_id,
                reason,
                first_delay_s=float(delay) if isinstance(delay, int | float) else 0.0,
            )
        unit.add(plan)


class FollowUpIssuePolicy:
    """The Chief's `follow_up` on a finished task is a verdict that asks for work: it opens
    a `follow_up` issue (once per review) with the Chief's notes, linked to the task's run,
    where the writer sees it beside the run's checks. The plan itself goes on: a task's
    dependants may have started before the review came back, and re-running work is the
    writer's call (`controlroom retry`, or a new task)."""

    name = "policy.plan_follow_ups"
    follows = frozenset({TaskReviewed.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, TaskReviewed)
        if event.decision != "follow_up":
            return
        plan = unit.get(SessionPlan, event.originator_id)
        if plan is None or event.task_id not in plan.tasks:
            return
        issue_id = (
            "iss_"
            + sha256_text(f"follow_up:{plan.id}:{event.task_id}:{event.originator_version}")[:24]
        )
        if unit.get(Issue, issue_id) is not None:
            return
        task = plan.tasks[event.task_id]
        run_id = plan.run_ids.get(event.task_id)
        unit.add(
            Issue.open(
                issue_id,
                event.timestamp,
                kind="follow_up",
                title=f"The Chief asks for a follow-up on task {event.task_id}: "
                f"{task.description[:80]}",
                detail=f"{event.notes}\n\nThe task's Definition of Done: {task.dod}\n"
                f"Its run's own DoD {'passed' if event.dod_passed else 'did not pass'}.",
                run_id=run_id,
                session_id=plan.session_id,
                recipe_id=None,
                check={"plan_id": plan.id, "task_id": event.task_id},
                evidence={"decision": event.decision, "notes": event.notes},
            )
        )
