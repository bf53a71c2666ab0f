"""The SessionPlan aggregate: the Chief's tasks for one intent, approved and run by the user.

A task's state is never stored: it is derived from the plan's events (the seed's six
states). Pending means ready; a running plan asks for a run for each pending task
(`TaskRunRequested`, whose run id is fixed by plan and task), a policy records each run's
outcome (`TaskFinished`), and the plan finishes when nothing more can happen without the
user. Every user control is an event; each refusal says why.

The Chief reviews each finished task. A review that fails is recorded (`TaskReviewFailed`)
and asked again later, at most `REVIEW_ATTEMPTS` times in all, then given up
(`TaskReviewAbandoned`): whether and when to ask again is read from these events, so a
restarted process neither resets the count nor asks early. A review never holds up the
plan: the next task runs as soon as the run it needs has finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import DomainEvent
from controlroom.domain.model_calls import ModelCalled, model_called_fields
from controlroom.domain.outcome_codes import Layer, Reaction, settled
from controlroom.domain.outcomes import AttemptFailure
from controlroom.domain.plan_errors import PlanInputError, PlanStateError
from controlroom.domain.plan_events import (
    ChiefAttemptFailed,
    PlanApproved,
    PlanCreated,
    PlanFinished,
    PlanPaused,
    PlanResumed,
    PlanStarted,
    PlanTask,
    ScopingAnswered,
    TaskAdded,
    TaskEdited,
    TaskFinished,
    TaskForceStarted,
    TaskOutcome,
    TaskRemoved,
    TaskRetried,
    TaskReviewAbandoned,
    TaskReviewed,
    TaskReviewFailed,
    TaskRunRequested,
    TasksReordered,
)


class PlanStatus(StrEnum):
    DRAFT = "draft"  # proposed by the Chief, waiting for the user's approval
    APPROVED = "approved"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"


class TaskState(StrEnum):
    PENDING = "pending"
    BLOCKED = "blocked"
    NEEDS_SCOPING = "needs_scoping"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


PLAN_FINISHED = frozenset({PlanStatus.DONE, PlanStatus.FAILED})
#: How many times, at most, the Chief is asked to review one task (each time with its
#: call's own transport retries) before the review is given up.
REVIEW_ATTEMPTS = 3


def plan_run_id(plan_id: str, task_id: int, attempt: int = 1) -> str:
    """The run of a plan's task (its `attempt`-th): the same in every process, so it is
    started once."""
    suffix = "" if attempt == 1 else f":attempt:{attempt}"
    return "run_" + sha256_text(f"{plan_id}:task:{task_id}{suffix}")[:24]


def check_tasks(tasks: Sequence[PlanTask]) -> None:
    """Ids unique, every dep a task of the plan and not the task itself, no cycle."""
    ids = [t.task_id for t in tasks]
    seen: set[int] = set()
    for index, task_id in enumerate(ids):
        if task_id in seen:
            raise PlanInputError(f"task id {task_id} appears twice", f"tasks[{index}].task_id")
        seen.add(task_id)
    for index, task in enumerate(tasks):
        for dep in task.deps:
            where = f"tasks[{index}].deps"
            if dep == task.task_id:
                raise PlanInputError(f"task {task.task_id} depends on itself", where)
            if dep not in seen:
                raise PlanInputError(
                    f"task {task.task_id} depends on task {dep}, which is not in the plan", where
                )
    cycle = find_cycle({t.task_id: list(t.deps) for t in tasks})
    if cycle:
        raise PlanInputError(
            "dependency cycle: " + " -> ".join(str(t) for t in cycle), "tasks.deps"
        )


def find_cycle(deps: dict[int, list[int]]) -> list[int]:
    """A dependency cycle as a path that returns to its start, or [] when there is none."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done

    def visit(node: int, path: list[int]) -> list[int]:
        state[node] = 1
        for dep in deps.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep] if dep in path else [node, dep]
            if dep not in state:
                found = visit(dep, [*path, dep])
                if found:
                    return found
        state[node] = 2
        return []

    for node in sorted(deps):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return []


class SessionPlan(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.status = PlanStatus.DRAFT
        self.intent = ""
        self.session_id = ""
        self.tasks: dict[int, PlanTask] = {}
        self.order: list[int] = []
        self.run_ids: dict[int, str] = {}
        self.outcomes: dict[int, TaskOutcome] = {}
        self.forced: set[int] = set()
        self.reviews: dict[int, TaskReviewed] = {}
        self.review_failures: dict[int, list[TaskReviewFailed]] = {}
        self.abandoned_reviews: dict[int, TaskReviewAbandoned] = {}
        #: The Chief's replies for this plan (planning, reviews), each a call paid for.
        self.chief_calls: list[ModelCalled] = []
        self.chief_attempts: list[ChiefAttemptFailed] = []
        self.answers: dict[int, str] = {}
        #: Runs each task was given (a run that needed refinement is followed by another).
        self.attempts: dict[int, int] = {}

    # -- commands ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        plan_id: str,
        at: datetime,
        *,
        intent: str,
        session_id: str,
        tasks: Sequence[PlanTask],
        created_by: str = "chief",
        chief: dict[str, Any] | None = None,
        failed_attempts: Sequence[AttemptFailure] = (),
    ) -> SessionPlan:
        """A draft plan; `failed_attempts` are the Chief's calls that failed (and were
        retried) on the way to it, recorded after it."""
        if not intent.strip():
            raise PlanInputError("the intent is empty", "intent")
        if not tasks:
            raise PlanInputError("a plan needs at least one task", "tasks")
        check_tasks(tasks)
        plan = cls(plan_id)
        plan._trigger(
            PlanCreated,
            at,
            intent=intent,
            created_by=created_by,
            session_id=session_id,
            tasks=list(tasks),
            chief=chief or {},
        )
        plan.record_chief_attempts(at, failed_attempts)
        return plan

    def approve(self, at: datetime) -> None:
        self._check_status("be approved", PlanStatus.DRAFT)
        self._trigger(PlanApproved, at)

    def start(self, at: datetime) -> None:
        if self.status == PlanStatus.DRAFT:
            raise PlanStateError(self.id, self.status, "start: approve it first (plan approve)")
        if self.status == PlanStatus.PAUSED:
            raise PlanStateError(self.id, self.status, "start: it was started; resume it")
        self._check_status("start", PlanStatus.APPROVED)
        self._trigger(PlanStarted, at)
        self._advance(at)

    def pause(self, at: datetime, reason: str = "") -> None:
        self._check_status("pause", PlanStatus.RUNNING)
        self._trigger(PlanPaused, at, reason=reason)

    def resume(self, at: datetime) -> None:
        self._check_status("resume", PlanStatus.PAUSED)
        self._trigger(PlanResumed, at)
        self._advance(at)

    def reorder(self, at: datetime, order: Sequence[int]) -> None:
        """A new order of the tasks (every task once); a task never before one it needs."""
        self._check_not_finished("be reordered")
        wanted = list(order)
        if sorted(wanted) != sorted(self.order):
            raise PlanInputError(
                "the new order must list every task of the plan exactly once "
                f"(tasks: {', '.join(map(str, self.order))})",
                "order",
            )
        position = {task_id: index for index, task_id in enumerate(wanted)}
        for task_id in wanted:
            for dep in self.tasks[task_id].deps:
                if dep in position and position[dep] > position[task_id]:
                    raise PlanInputError(
                        f"task {task_id} depends on task {dep}, so it cannot come before it",
                        "order",
                    )
        if wanted != self.order:
            self._trigger(TasksReordered, at, order=wanted)

    def remove(self, at: datetime, task_id: int, *, cascade: bool = False) -> list[int]:
        """Remove a task not yet started. Tasks that depend on it are removed with it when
        `cascade`, else the removal is refused naming them. Returns what was removed."""
        self._check_not_finished("change")
        self._check_task(task_id)
        dependants = self.dependants_of(task_id)
        if dependants and not cascade:
            raise PlanInputError(
                f"tasks {', '.join(map(str, dependants))} depend on task {task_id}; "
                "remove them too with --cascade (cascade=true), or edit their deps first",
                "task_id",
            )
        removed = [task_id, *dependants]
        for each in removed:
            if each in self.run_ids:
                raise PlanStateError(
                    self.id, self.task_state(each), f"remove task {each}: it has a run already"
                )
        if len(self.tasks) == len(removed):
            raise PlanInputError("a plan cannot lose its last task", "task_id")
        self._trigger(TaskRemoved, at, task_id=task_id, cascaded=dependants)
        return removed

    def add(self, at: datetime, task: PlanTask) -> None:
        """A new task, last in the plan (its deps among the plan's tasks); a running plan
        starts it as soon as what it depends on is done."""
        self._check_not_finished("take a new task")
        if task.task_id in self.tasks:
            raise PlanInputError(f"plan {self.id} has a task {task.task_id} already", "task_id")
        check_tasks([*self.tasks.values(), task])
        self._trigger(TaskAdded, at, task=task)
        self._advance(at)

    def edit(self, at: datetime, task: PlanTask) -> None:
        """Replace a task not yet started (a new description, routed again by the caller)."""
        self._check_not_finished("change")
        self._check_task(task.task_id)
        self._check_not_started(task.task_id, "edit")
        updated = [task if t.task_id == task.task_id else t for t in self.tasks.values()]
        check_tasks(updated)
        self._trigger(TaskEdited, at, task=task)
        self._advance(at)

    def answer(self, at: datetime, task_id: int, answer: str, task: PlanTask) -> None:
        """The user's answer to a task's scoping question; `task` is the task it yields."""
        self._check_not_finished("change")
        self._check_task(task_id)
        current = self.tasks[task_id]
        if current.scoping_question is None:
            raise PlanInputError(f"task {task_id} has no scoping question to answer", "task_id")
        self._check_not_started(task_id, "answer")
        if not answer.strip():
            raise PlanInputError("the answer is empty", "answer")
        if task.task_id != task_id or task.recipe_id is None:
            raise PlanInputError(
                "the answer must yield a routable task for the same task id", "answer"
            )
        check_tasks([task if t.task_id == task_id else t for t in self.tasks.values()])
        self._trigger(ScopingAnswered, at, answer=answer, task=task)
        self._advance(at)

    def force_start(self, at: datetime, task_id: int) -> None:
        """Start a blocked task now, at the user's risk; recorded with the deps it skips."""
        self._check_status("force-start a task", PlanStatus.RUNNING, PlanStatus.PAUSED)
        self._check_task(task_id)
        state = self.task_state(task_id)
        if state != TaskState.BLOCKED:
            raise PlanStateError(
                self.id, state, f"force-start task {task_id}: only a blocked task can be"
            )
        unfinished = [d for d in self.tasks[task_id].deps if self.outcomes.get(d) != "done"]
        self._trigger(TaskForceStarted, at, task_id=task_id, unfinished_deps=unfinished)
        self._trigger(TaskRunRequested, at, task_id=task_id, run_id=plan_run_id(self.id, task_id))

    def record_run_outcome(
        self,
        at: datetime,
        run_id: str,
        outcome: TaskOutcome,
        detail: str = "",
        code: int | None = None,
    ) -> bool:
        """A task's run ended. A failed task whose run later succeeds (the user retried
        it) becomes done. Returns whether anything was recorded."""
        task_id = self.task_of_run(run_id)
        if task_id is None or task_id not in self.tasks:
            return False
        previous = self.outcomes.get(task_id)
        if previous == outcome or previous == "done":
            return False
        reaction: str | None = None
        if code is not None and previous is None:
            # Seed 004's table, the plan as the campaign layer: a run that needs refinement
            # runs once more; the rest end the task as their code says.
            attempt = self.attempts.get(task_id, 1)
            chosen, _ = settled(Layer.CAMPAIGN, code, attempt)
            reaction = chosen.value
            if chosen is Reaction.RETRY_ONCE:
                self._trigger(TaskRetried, at, task_id=task_id, run_id=run_id, code=code,
                              detail=detail)  # fmt: skip
                again = plan_run_id(self.id, task_id, attempt + 1)
                self._trigger(TaskRunRequested, at, task_id=task_id, run_id=again)
                return True
            if chosen is Reaction.ABSORB_PARTIAL:
                outcome = "done"
        self._trigger(
            TaskFinished, at, task_id=task_id, run_id=run_id, outcome=outcome, detail=detail,
            code=code, reaction=reaction,
        )  # fmt: skip
        self._advance(at)
        return True

    def review(
        self, at: datetime, task_id: int, *, decision: str, notes: str, dod_passed: bool
    ) -> None:
        self._check_reviewable(task_id)
        self._trigger(
            TaskReviewed,
            at,
            task_id=task_id,
            decision=decision,
            notes=notes,
            dod_passed=dod_passed,
        )

    def fail_review(
        self,
        at: datetime,
        task_id: int,
        error: str,
        *,
        first_delay_s: float,
        attempts_allowed: int = REVIEW_ATTEMPTS,
    ) -> TaskReviewFailed:
        """The Chief's review of the task failed. It is asked again after `first_delay_s`,
        doubling each time, until `attempts_allowed` reviews have failed: then it is given
        up."""
        self._check_reviewable(task_id)
        attempt = len(self.review_failures.get(task_id, [])) + 1
        gives_up = attempt >= attempts_allowed
        retry_at = None if gives_up else at + timedelta(seconds=first_delay_s * 2 ** (attempt - 1))
        failed = self._trigger(
            TaskReviewFailed, at, task_id=task_id, attempt=attempt, error=error, retry_at=retry_at
        )
        if gives_up:
            self._trigger(TaskReviewAbandoned, at, task_id=task_id, attempts=attempt, error=error)
        return failed

    def record_chief_attempts(
        self, at: datetime, failures: Sequence[AttemptFailure], task_id: int | None = None
    ) -> None:
        """The Chief's failed model calls (transport faults), planning or reviewing a task."""
        for failure in failures:
            self._trigger(ChiefAttemptFailed, at, task_id=task_id, **failure.fields())

    def record_model_calls(self, at: datetime, calls: Sequence[Mapping[str, Any]]) -> None:
        """The Chief's replies while planning (each a model call paid for, accepted or
        not). A review's calls are recorded in its own run (`engine/review_step.py`)."""
        for call in calls:
            self._trigger(ModelCalled, at, **model_called_fields(dict(call)))

    # -- queries ----------------------------------------------------------------------------

    def task_state(self, task_id: int) -> TaskState:
        if task_id in self.outcomes:
            return TaskState(self.outcomes[task_id])
        if task_id in self.run_ids:
            return TaskState.RUNNING
        task = self.tasks[task_id]
        if task.recipe_id is None:
            return TaskState.NEEDS_SCOPING
        if any(self.outcomes.get(dep) != "done" for dep in task.deps):
            return TaskState.BLOCKED
        return TaskState.PENDING

    def states(self) -> dict[int, TaskState]:
        return {task_id: self.task_state(task_id) for task_id in self.order}

    def task_of_run(self, run_id: str) -> int | None:
        for task_id, known in self.run_ids.items():
            if known == run_id:
                return task_id
        return None

    def dependants_of(self, task_id: int) -> list[int]:
        """Every task that needs `task_id`, directly or through others, in plan order."""
        needed = {task_id}
        changed = True
        while changed:
            changed = False
            for other in self.order:
                if other not in needed and needed & set(self.tasks[other].deps):
                    needed.add(other)
                    changed = True
        return [t for t in self.order if t in needed and t != task_id]

    def unreviewed(self) -> list[int]:
        """Finished tasks the Chief has not reviewed and that are not given up."""
        return [
            t
            for t in self.order
            if t in self.outcomes and t not in self.reviews and t not in self.abandoned_reviews
        ]

    def review_retry_at(self, task_id: int) -> datetime | None:
        """When the task's failed review may be asked again (None: it has not failed)."""
        failures = self.review_failures.get(task_id)
        return failures[-1].retry_at if failures else None

    def reviews_due(self, now: datetime) -> list[int]:
        """The unreviewed tasks the Chief may be asked about now: never asked, or their last
        failed review's wait is over."""
        return [
            t
            for t in self.unreviewed()
            if (retry_at := self.review_retry_at(t)) is None or retry_at <= now
        ]

    def next_review_retry(self) -> datetime | None:
        """The earliest time a failed review is to be asked again, if one is waiting."""
        waiting = [at for t in self.unreviewed() if (at := self.review_retry_at(t)) is not None]
        return min(waiting, default=None)

    @property
    def is_finished(self) -> bool:
        return self.status in PLAN_FINISHED

    # -- internals --------------------------------------------------------------------------

    def _advance(self, at: datetime) -> None:
        """While running: ask for a run for every pending task, in plan order; finish when
        nothing more can happen without the user."""
        if self.status != PlanStatus.RUNNING:
            return
        for task_id in self.order:
            if self.task_state(task_id) == TaskState.PENDING:
                self._trigger(
                    TaskRunRequested, at, task_id=task_id, run_id=plan_run_id(self.id, task_id)
                )
        states = self.states()
        if any(not self._settled(task_id, states) for task_id in self.order):
            return
        failed = [t for t, s in states.items() if s != TaskState.DONE]
        summary = (
            f"{len(states)} task(s) done"
            if not failed
            else f"{len(states) - len(failed)} of {len(states)} task(s) done; "
            f"not done: {', '.join(map(str, failed))}"
        )
        self._trigger(PlanFinished, at, outcome="failed" if failed else "done", summary=summary)

    def _settled(self, task_id: int, states: dict[int, TaskState]) -> bool:
        """Finished, or blocked for good: something it needs failed, or is itself blocked
        for good."""
        state = states[task_id]
        if state in (TaskState.DONE, TaskState.FAILED):
            return True
        return state == TaskState.BLOCKED and self._blocked_for_good(task_id, states)

    def _blocked_for_good(self, task_id: int, states: dict[int, TaskState]) -> bool:
        return any(
            states[dep] == TaskState.FAILED
            or (states[dep] == TaskState.BLOCKED and self._blocked_for_good(dep, states))
            for dep in self.tasks[task_id].deps
        )

    def _check_status(self, wanted: str, *allowed: PlanStatus) -> None:
        if self.status not in allowed:
            raise PlanStateError(self.id, self.status, wanted)

    def _check_not_finished(self, wanted: str) -> None:
        if self.is_finished:
            raise PlanStateError(self.id, self.status, wanted)

    def _check_task(self, task_id: int) -> None:
        if task_id not in self.tasks:
            raise PlanInputError(
                f"plan {self.id} has no task {task_id} "
                f"(tasks: {', '.join(map(str, self.order)) or 'none'})",
                "task_id",
            )

    def _check_reviewable(self, task_id: int) -> None:
        self._check_task(task_id)
        if task_id not in self.outcomes:
            raise PlanStateError(self.id, self.task_state(task_id), "review an unfinished task")
        if task_id in self.reviews or task_id in self.abandoned_reviews:
            raise PlanStateError(
                self.id, self.task_state(task_id), f"review task {task_id}: its review is over"
            )

    def _check_not_started(self, task_id: int, wanted: str) -> None:
        if task_id in self.run_ids:
            raise PlanStateError(
                self.id, self.task_state(task_id), f"{wanted} task {task_id}: it has started"
            )

    def apply(self, event: DomainEvent) -> None:
        handler = _APPLY.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_created(self, e: PlanCreated) -> None:
        self.intent, self.session_id = e.intent, e.session_id
        self.tasks = {t.task_id: t for t in e.tasks}
        self.order = [t.task_id for t in e.tasks]

    def _on_removed(self, e: TaskRemoved) -> None:
        for task_id in (e.task_id, *e.cascaded):
            self.tasks.pop(task_id, None)
            self.order.remove(task_id)

    def _on_run_requested(self, e: TaskRunRequested) -> None:
        self.run_ids[e.task_id] = e.run_id
        self.attempts[e.task_id] = self.attempts.get(e.task_id, 0) + 1

    def _on_added(self, e: TaskAdded) -> None:
        self.tasks[e.task.task_id] = e.task
        self.order.append(e.task.task_id)

    def _on_edited(self, e: TaskEdited | ScopingAnswered) -> None:
        self.tasks[e.task.task_id] = e.task
        if isinstance(e, ScopingAnswered):
            self.answers[e.task.task_id] = e.answer

    def _on_finished(self, e: TaskFinished) -> None:
        self.outcomes[e.task_id] = e.outcome
        if self.is_finished and e.outcome == "done":
            # A failed task's run was retried and succeeded: its dependants can go on.
            self.status = PlanStatus.RUNNING

    def _set(self, status: PlanStatus) -> None:
        self.status = status


def _status(status: PlanStatus) -> Any:
    return lambda plan, e: plan._set(status)


_APPLY: dict[type[DomainEvent], Any] = {
    PlanCreated: SessionPlan._on_created,
    PlanApproved: _status(PlanStatus.APPROVED),
    PlanStarted: _status(PlanStatus.RUNNING),
    PlanPaused: _status(PlanStatus.PAUSED),
    PlanResumed: _status(PlanStatus.RUNNING),
    TasksReordered: lambda plan, e: setattr(plan, "order", list(e.order)),
    TaskRemoved: SessionPlan._on_removed,
    TaskAdded: SessionPlan._on_added,
    TaskEdited: SessionPlan._on_edited,
    ScopingAnswered: SessionPlan._on_edited,
    TaskForceStarted: lambda plan, e: plan.forced.add(e.task_id),
    TaskRunRequested: SessionPlan._on_run_requested,
    TaskRetried: lambda plan, e: None,
    TaskFinished: SessionPlan._on_finished,
    TaskReviewed: lambda plan, e: plan.reviews.__setitem__(e.task_id, e),
    TaskReviewFailed: lambda plan, e: plan.review_failures.setdefault(e.task_id, []).append(e),
    TaskReviewAbandoned: lambda plan, e: plan.abandoned_reviews.__setitem__(e.task_id, e),
    ChiefAttemptFailed: lambda plan, e: plan.chief_attempts.append(e),
    ModelCalled: lambda plan, e: plan.chief_calls.append(e),
    PlanFinished: lambda plan, e: plan._set(PlanStatus(e.outcome)),
}


def events_of(types: Iterable[type[DomainEvent]]) -> frozenset[str]:
    return frozenset(t.type_name for t in types)


#: Every event a plan's stream can hold (for projections and feeds).
PLAN_EVENT_TYPES = events_of(_APPLY)
