"""The Chief's reviews of finished plan tasks, as runs.

A review is due when a task of a running plan has finished and has not been reviewed: never
asked, or its last failed attempt's wait is over (the plan bounds the attempts). For each due
review one run of the bundled `plan_task_review` recipe is started, under an id fixed by the
plan, the task and the attempt, so however many processes look, each attempt runs once. The
run is executed like any (the CLI's plan driver, `serve`, a worker); when it ends, a tracked
policy (`engine/plan_policies.py` `ReviewOutcomePolicy`) records the review, or its failure
with the wait before the next attempt, on the plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from controlroom.domain.errors import ModelConfigError
from controlroom.domain.plan import SessionPlan
from controlroom.domain.run import Run
from controlroom.domain.run_events import RunOrigin, TaskSpec
from controlroom.engine.chief import CHIEF
from controlroom.engine.context import Context
from controlroom.eventstore.store import IntegrityError
from controlroom.models.config import ProviderConfig

RECIPE_ID = "plan_task_review"
POLICY = "plan.reviews"


def review_run_id(plan_id: str, task_id: int, attempt: int) -> str:
    digest = hashlib.sha256(f"review:{plan_id}:{task_id}:{attempt}".encode()).hexdigest()
    return f"run_{digest[:24]}"


def first_review_delay(ctx: Context) -> float:
    """The first wait before a failed review is asked again: where the Chief's transport
    retries left off (`backoff_s * 2**max_retries`)."""
    try:
        policy = ctx.agents.provider_config(ctx.agents.profile(CHIEF).provider)
    except ModelConfigError:
        policy = ProviderConfig(type="offline")  # the defaults
    return float(policy.backoff_s * 2**policy.max_retries)


def start_due_reviews(ctx: Context, plan_ids: Iterable[str], owner: str | None = None) -> list[str]:
    """Start the review run of every due review of these plans (once per attempt), and
    return the review runs of theirs that are unfinished: those for the caller to execute."""
    recipe = ctx.catalog.get(RECIPE_ID)
    unfinished: list[str] = []
    for plan_id in plan_ids:
        plan = ctx.store.load(SessionPlan, plan_id)
        if plan is None:
            continue
        now = ctx.clock.now()
        due = set(plan.reviews_due(now))
        for task_id in plan.unreviewed():
            attempt = len(plan.review_failures.get(task_id, [])) + 1
            run_id = review_run_id(plan.id, task_id, attempt)
            run = ctx.store.load(Run, run_id)
            if run is None and task_id in due:
                run = Run.start(
                    run_id=run_id,
                    at=now,
                    recipe=recipe,
                    task=TaskSpec(
                        description=f"Review task {task_id}: {plan.tasks[task_id].description}",
                        args={
                            "plan_id": plan.id,
                            "task_id": task_id,
                            "attempt": attempt,
                            "first_delay_s": first_review_delay(ctx),
                        },
                    ),
                    routing=None,
                    session_id=plan.session_id,
                    trace_id="tr_" + run_id.removeprefix("run_"),
                    origin=RunOrigin(
                        kind="plan_task", plan_id=plan.id, task_id=task_id, policy=POLICY
                    ),
                )
                if owner:
                    run.claim(now, owner, ctx.settings.lease_s)
                try:
                    ctx.store.save(run)
                except IntegrityError:
                    continue  # another process started this attempt first
            if run is not None and not run.is_finished:
                unfinished.append(run_id)
    return unfinished
