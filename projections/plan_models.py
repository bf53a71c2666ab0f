"""Typed views of session plans: what the CLI prints, HTTP returns and the dashboard draws."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskReviewView(_View):
    decision: str
    notes: str
    dod_passed: bool


class PlanTaskView(_View):
    task_id: int
    description: str
    recipe_id: str | None
    args: dict[str, Any] = Field(default_factory=dict)
    deps: list[int]
    dod: str
    state: str = Field(description="pending, blocked, needs_scoping, running, done or failed")
    scoping_question: str | None = None
    choices: list[str] = Field(default_factory=list)
    answer: str | None = None
    run_id: str | None = None
    #: The run's own status while the projection of runs has it (running, done, ...).
    run_status: str | None = None
    forced: bool = False
    #: The clarify packet (needs scoping, with choices) or the first agent's task packet.
    packet: dict[str, Any] | None = None
    outcome_detail: str | None = None
    review: TaskReviewView | None = None
    #: Failed attempts at the Chief's review so far, and why it was given up (if it was).
    review_failures: int = 0
    review_given_up: str | None = None


class PlanSummary(_View):
    plan_id: str
    intent: str
    status: str = Field(description="draft, approved, running, paused, done or failed")
    created_at: str
    updated_at: str
    tasks: int
    done: int
    failed: int
    needs_scoping: int


class PlanDetail(_View):
    plan_id: str
    intent: str
    status: str
    session_id: str
    created_by: str
    created_at: str
    updated_at: str
    version: int
    chief: dict[str, Any] = Field(default_factory=dict)
    summary: str | None = Field(default=None, description="How the plan finished, once it has")
    tasks: list[PlanTaskView]
