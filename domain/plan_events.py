"""Everything that can happen to a session plan, as past-tense, frozen, closed events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain.events import DomainEvent

TaskOutcome = Literal["done", "failed"]


class PlanTask(BaseModel):
    """One task as the Chief proposed it (or the user edited it): what to do, which recipe
    the router chose for it (None: it needs scoping first), and what it waits on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: int = Field(ge=1)
    description: str = Field(min_length=1)
    recipe_id: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    deps: list[int] = Field(default_factory=list)
    dod: str = ""
    #: Asked when the router cannot place the task, or the request is ambiguous.
    scoping_question: str | None = None
    #: A clarify questionnaire's choices (seed 001: `intent=clarify` carries choices).
    choices: list[str] = Field(default_factory=list)
    #: Why the router placed the task where it did, or could not.
    routing_reason: str = ""
    #: The recipe as it was when the task was placed: the run runs what the user approved.
    recipe: dict[str, Any] | None = None
    #: Seed 001 PH-2: the clarify packet a task needing scoping was asked with (choices),
    #: or, once answered, the task packet for the agent that will act first.
    packet: dict[str, Any] | None = None


class PlanCreated(DomainEvent):
    type_name: ClassVar[str] = "PlanCreated"
    intent: str
    created_by: str
    session_id: str
    tasks: list[PlanTask]
    #: The Chief's model and how many replies it took, for the audit.
    chief: dict[str, Any] = Field(default_factory=dict)


class PlanApproved(DomainEvent):
    type_name: ClassVar[str] = "PlanApproved"


class PlanStarted(DomainEvent):
    type_name: ClassVar[str] = "PlanStarted"


class PlanPaused(DomainEvent):
    type_name: ClassVar[str] = "PlanPaused"
    reason: str = ""


class PlanResumed(DomainEvent):
    type_name: ClassVar[str] = "PlanResumed"


class TasksReordered(DomainEvent):
    type_name: ClassVar[str] = "TasksReordered"
    order: list[int]


class TaskRemoved(DomainEvent):
    type_name: ClassVar[str] = "TaskRemoved"
    task_id: int
    #: Tasks that depended on it and were removed with it (`--cascade`).
    cascaded: list[int] = Field(default_factory=list)


class TaskAdded(DomainEvent):
    """A task added to a plan after the Chief made it (a loop's proposed next loop, say):
    routed like the Chief's own, placed last, after the tasks it depends on."""

    type_name: ClassVar[str] = "TaskAdded"
    task: PlanTask


class TaskEdited(DomainEvent):
    """A new description, routed again: the recipe and scoping question may change."""

    type_name: ClassVar[str] = "TaskEdited"
    task: PlanTask


class ScopingAnswered(DomainEvent):
    type_name: ClassVar[str] = "ScopingAnswered"
    answer: str
    task: PlanTask


class TaskForceStarted(DomainEvent):
    """The user started a task whose deps are not done, at their own risk."""

    type_name: ClassVar[str] = "TaskForceStarted"
    task_id: int
    unfinished_deps: list[int]


class TaskRunRequested(DomainEvent):
    """The plan decided a task runs now, as this run (its id is fixed by plan and task, so
    the run is started once however many processes act on this event)."""

    type_name: ClassVar[str] = "TaskRunRequested"
    task_id: int
    run_id: str


class TaskFinished(DomainEvent):
    type_name: ClassVar[str] = "TaskFinished"
    task_id: int
    run_id: str
    outcome: TaskOutcome
    detail: str = ""
    #: The run's seed 004 outcome code, and what the plan (the campaign layer) did with it.
    code: int | None = None
    reaction: str | None = None


class TaskRetried(DomainEvent):
    """The plan, as seed 004's campaign layer, runs a task once more: its run ended
    NEEDS_REFINEMENT (10). The new run follows (`TaskRunRequested`)."""

    type_name: ClassVar[str] = "TaskRetried"
    task_id: int
    run_id: str
    code: int
    detail: str = ""


class TaskReviewed(DomainEvent):
    """The Chief's review of a finished task against its DoD."""

    type_name: ClassVar[str] = "TaskReviewed"
    task_id: int
    decision: str
    notes: str
    dod_passed: bool


class ChiefAttemptFailed(DomainEvent):
    """One failed attempt at a call to the Chief's model (a transport fault: 429, 5xx, a
    refused connection, a timeout) while it planned (`task_id` None) or reviewed a task;
    `will_retry` says whether the engine asked again, `retry_in_s` after how long."""

    type_name: ClassVar[str] = "ChiefAttemptFailed"
    task_id: int | None = None
    attempt: int
    provider: str
    model: str
    kind: str
    status: int | None = None
    message: str
    will_retry: bool
    retry_in_s: float = 0.0


class TaskReviewFailed(DomainEvent):
    """The Chief's review of a finished task failed (after its call's own retries): it is
    asked again from `retry_at`, or, when that is None, given up (`TaskReviewAbandoned`)."""

    type_name: ClassVar[str] = "TaskReviewFailed"
    task_id: int
    #: 1 for the first review attempt of this task; never above the plan's bound.
    attempt: int
    error: str
    retry_at: datetime | None = None


class TaskReviewAbandoned(DomainEvent):
    """No review of the task after the bounded attempts: nobody asks the Chief again. The
    task's own outcome (its run and DoD) stands."""

    type_name: ClassVar[str] = "TaskReviewAbandoned"
    task_id: int
    attempts: int
    error: str


class PlanFinished(DomainEvent):
    type_name: ClassVar[str] = "PlanFinished"
    outcome: TaskOutcome
    summary: str = ""
