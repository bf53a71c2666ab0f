"""Commands on session plans: create (the Chief), approve, start, pause, resume, answer,
force-start, reorder, remove, edit; and the Chief's review of finished tasks.

A review is bounded: one that fails is recorded on the plan and asked again later (the wait
continues the Chief's provider's backoff: `backoff_s * 2**max_retries`, doubling), at most
`REVIEW_ATTEMPTS` times, then given up. Every failed model call of the Chief is recorded
too (`ChiefAttemptFailed`), with the plan it made or on the task it reviewed.

Each command is get -> command -> save; a save that loses a race (another process moved
the plan meanwhile, e.g. a policy recording a finished task) is tried again on the new
state, so a user's control is never lost to a concurrent reaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from eventsourcing.persistence import IntegrityError

from controlroom.domain.errors import (
    RunConflictError,
)
from controlroom.domain.outcomes import AttemptFailure, AttemptReport
from controlroom.domain.plan import SessionPlan, TaskState
from controlroom.domain.plan_errors import (
    PlanInputError,
    PlanNotFoundError,
)
from controlroom.domain.plan_events import PlanTask
from controlroom.domain.run import Run
from controlroom.engine.chief import Chief, workspace_scenes
from controlroom.engine.context import Context

ATTEMPTS = 20
T = TypeVar("T")
#: What a failed review is: the Chief's call failed or its replies were no review.


class PlanService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.chief = Chief(ctx)

    async def create(self, intent: str) -> SessionPlan:
        """The Chief's plan for the intent, recorded as a draft for the user to approve."""
        failures = _Failures()
        proposal = await self.chief.decompose(intent, failures)
        plan = SessionPlan.create(
            self.ctx.ids.new("plan"),
            self.ctx.clock.now(),
            intent=intent,
            session_id=self.ctx.ids.new("sess"),
            tasks=proposal.tasks,
            chief={**proposal.chief, "summary": proposal.summary},
            failed_attempts=failures,
        )
        plan.record_model_calls(self.ctx.clock.now(), proposal.calls)
        self.ctx.store.save(plan)
        return plan

    def load(self, plan_id: str) -> SessionPlan:
        plan = self.ctx.store.load(SessionPlan, plan_id)
        if plan is None:
            raise PlanNotFoundError(plan_id)
        return plan

    def approve(self, plan_id: str) -> SessionPlan:
        def approve(plan: SessionPlan) -> None:
            # Every role the routed recipes need must be configured: fail before anything runs.
            for task in plan.tasks.values():
                if task.recipe_id is not None and task.recipe_id in self.ctx.catalog:
                    recipe = self.ctx.catalog.get(task.recipe_id)
                    self.ctx.agents.check(recipe.agent_archetypes())
            plan.approve(self.ctx.clock.now())

        return self._change(plan_id, approve)

    def start(self, plan_id: str) -> SessionPlan:
        return self._change(plan_id, lambda plan: plan.start(self.ctx.clock.now()))

    def pause(self, plan_id: str, reason: str = "") -> SessionPlan:
        return self._change(plan_id, lambda plan: plan.pause(self.ctx.clock.now(), reason))

    def resume(self, plan_id: str) -> SessionPlan:
        return self._change(plan_id, lambda plan: plan.resume(self.ctx.clock.now()))

    def force_start(self, plan_id: str, task_id: int) -> SessionPlan:
        return self._change(plan_id, lambda plan: plan.force_start(self.ctx.clock.now(), task_id))

    def reorder(self, plan_id: str, order: list[int]) -> SessionPlan:
        return self._change(plan_id, lambda plan: plan.reorder(self.ctx.clock.now(), order))

    def remove(self, plan_id: str, task_id: int, *, cascade: bool = False) -> SessionPlan:
        return self._change(
            plan_id, lambda plan: plan.remove(self.ctx.clock.now(), task_id, cascade=cascade)
        )

    def add(self, plan_id: str, description: str, after: list[int] | None = None) -> SessionPlan:
        """A new task at the end of the plan, routed as the Chief's tasks are; it waits
        for the tasks `after` names (default: the plan's last task)."""
        if not description.strip():
            raise PlanInputError("the description is empty", "description")

        def add(plan: SessionPlan) -> None:
            deps = list(after) if after is not None else plan.order[-1:]
            for dep in deps:
                self._task(plan, dep)
            task_id = max(plan.tasks, default=0) + 1
            task = self._placed(plan, PlanTask(task_id=task_id, description=description, deps=deps))
            plan.add(self.ctx.clock.now(), task)

        return self._change(plan_id, add)

    def edit(self, plan_id: str, task_id: int, description: str) -> SessionPlan:
        """A new description for a task not yet started, routed again."""
        if not description.strip():
            raise PlanInputError("the description is empty", "description")

        def edit(plan: SessionPlan) -> None:
            current = self._task(plan, task_id)
            task = self._placed(plan, current.model_copy(update={"description": description}))
            plan.edit(self.ctx.clock.now(), task)

        return self._change(plan_id, edit)

    def answer(self, plan_id: str, task_id: int, answer: str) -> SessionPlan:
        """Answer a task's scoping question: one of its choices (by number or text), or
        words that make the task precise. Refused, with the router's reason, when the
        answer still leaves the task unroutable."""

        def apply(plan: SessionPlan) -> None:
            current = self._task(plan, task_id)
            if current.scoping_question is None:
                raise PlanInputError(f"task {task_id} has no scoping question to answer", "task_id")
            description = _answered(current, answer)
            parent = (current.packet or {}).get("packet_id")
            task = self._placed(
                plan,
                current.model_copy(update={"description": description, "choices": []}),
                parent_packet=parent,
            )
            if task.recipe_id is None:
                raise PlanInputError(
                    f"with that answer the task is still not routable ({task.routing_reason}); "
                    f"{task.scoping_question}",
                    "answer",
                )
            plan.answer(self.ctx.clock.now(), task_id, answer, task)

        return self._change(plan_id, apply)

    def runs_to_execute(self, plan: SessionPlan) -> list[str]:
        """The plan's requested runs that have not ended."""
        return [
            run_id
            for task_id, run_id in plan.run_ids.items()
            if plan.task_state(task_id) == TaskState.RUNNING
        ]

    # -- internals --------------------------------------------------------------------------

    def _placed(
        self, plan: SessionPlan, task: PlanTask, parent_packet: str | None = None
    ) -> PlanTask:
        scenes = workspace_scenes(self.ctx)
        planned = {
            n
            for other in plan.tasks.values()
            if other.recipe_id == "creative_draft_scene" and other.task_id != task.task_id
            for n in _numbers(other.description)
        }
        return self.chief.routed(task, scenes, planned, parent_packet=parent_packet)

    @staticmethod
    def _task(plan: SessionPlan, task_id: int) -> PlanTask:
        if task_id not in plan.tasks:
            raise PlanInputError(
                f"plan {plan.id} has no task {task_id} (tasks: {', '.join(map(str, plan.order))})",
                "task_id",
            )
        return plan.tasks[task_id]

    def _change(self, plan_id: str, command: Callable[[SessionPlan], object]) -> SessionPlan:
        for _ in range(ATTEMPTS):
            plan = self.load(plan_id)
            command(plan)
            if not plan.pending_count:
                return plan
            try:
                self.ctx.store.save(plan)
            except IntegrityError:
                continue  # a policy moved the plan meanwhile: decide again on the new state
            return plan
        raise RunConflictError(plan_id)


class _Failures(list[AttemptFailure]):
    """Collects the Chief's failed attempts as they are reported."""

    def __call__(self, report: AttemptReport) -> None:
        if isinstance(report, AttemptFailure):
            self.append(report)


def _answered(task: PlanTask, answer: str) -> str:
    text = answer.strip()
    if not text:
        raise PlanInputError("the answer is empty", "answer")
    if task.choices:
        if text.isdigit():
            index = int(text)
            if not 1 <= index <= len(task.choices):
                raise PlanInputError(
                    f"choose 1 to {len(task.choices)} (or answer in words)", "answer"
                )
            return task.choices[index - 1]
        for choice in task.choices:
            if choice.lower() == text.lower():
                return choice
    return f"{task.description}: {text}"


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\bscenes?\s+#?(\d+)", text, re.IGNORECASE)]


def result_text(run: Run | None, passed: bool) -> str:
    """What the Chief is shown of a finished task's run, to review it against its DoD."""
    if run is None:
        return "No run was recorded."
    lines = [f"Run {run.id}: {run.status.value}", f"DoD: {'passed' if passed else 'failed'}"]
    for result in run.dod_results or []:
        lines.append(
            f"- check {result.index}: {'pass' if result.passed else 'FAIL'} {result.detail}"
        )
    failed = sum(1 for r in run.dod_results or [] if not r.passed)
    lines.append(f"Issues opened: {failed}")
    if run.error:
        lines.append(f"Error: {run.error}")
    if run.files_written:
        lines.append("Files written: " + ", ".join(sorted(run.files_written)))
    return "\n".join(lines)
