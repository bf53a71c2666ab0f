"""Typed views of the status of pipelines (seed 002's STATUS.md): what the CLI prints, HTTP
returns, the dashboard draws and the STATUS.md export renders."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: A step's states in a pipeline's current iteration.
STEP_STATES = ("pending", "running", "waiting", "done", "failed", "skipped", "deferred")


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PipelineStep(_View):
    """One step (phase) of the recipe in the current iteration's run."""

    index: int
    step_id: str
    kind: str = Field(description="tool, agent, review_gate, iteration_context, write_file, ...")
    phase: str = Field(description="a (tools) or b (agents and the rest)")
    role: str | None = Field(default=None, description="the agent's archetype or the tool")
    state: str = Field(description="pending, running, waiting, done, failed, skipped, deferred")
    #: How many times the step started in this run (a rollback, an escalation: more).
    runs: int = 0
    instance_id: str | None = None
    #: Why it is in that state: the failure, what it waits for, why it was skipped.
    detail: str | None = None


class Blocker(_View):
    """A step that waits for a person (the escalation ladder's last rung)."""

    step_id: str
    instance_id: str
    issue_id: str | None = None
    owner: str | None = None
    reason: str = ""
    since: str


class Escalation(_View):
    """A rung the current run climbed (or a review gate's rollback): a `FlowDecided` with
    `rung` set."""

    kind: str = Field(
        description="rollback, accept, escalate, consult, triage, human, answered or deferred"
    )
    subject: str | None = None
    from_model: str | None = None
    to_model: str | None = None
    reason: str
    at: str
    #: What else the rung recorded (gate, n, of, owner, by, skipped, ...).
    facts: dict[str, Any] = Field(default_factory=dict)


class CurrentRun(_View):
    run_id: str
    status: str = Field(description="running, waiting, done, partial, failed or cancelled")
    outcome: int | None = None
    started_at: str
    ended_at: str | None = None
    current_step: str | None = Field(default=None, description="the step (phase) now running")
    error: str | None = None
    steps: list[PipelineStep]
    blockers: list[Blocker] = Field(default_factory=list)
    escalations: list[Escalation] = Field(default_factory=list)


class ArchivedIteration(_View):
    """One row of the history: an iteration archived when its run ended."""

    number: int
    run_id: str
    result: str = Field(description="done, partial, failed or cancelled")
    outcome: int | None = None
    deferred: int
    relaxed: int
    deferred_items: list[dict[str, Any]] = Field(default_factory=list)
    relaxed_items: list[dict[str, Any]] = Field(default_factory=list)
    rungs: dict[str, int] = Field(default_factory=dict)
    gap_analysis: str | None = Field(default=None, description="the gap analysis, its start")
    archived_at: str
    archive: str = Field(description="where the archive is: the iteration's record and run")


class ExportState(_View):
    """The last STATUS.md export: written, or not written and why."""

    path: str
    state: str = Field(description="exported, conflict or refused")
    at: str
    position: int
    sha256: str | None = None
    problem: str | None = None


class PipelineSummary(_View):
    target_id: str
    target: str
    recipe_id: str
    iteration: int = Field(description="the current iteration's number")
    run_id: str | None = None
    run_status: str | None = None
    current_step: str | None = None
    blockers: int = 0
    escalations: int = 0
    iterations: int = Field(default=0, description="iterations archived so far")
    last_result: str | None = None
    updated_at: str


class PipelineDetail(_View):
    target_id: str
    target: str
    recipe_id: str
    iteration: int
    updated_at: str
    #: The log position of the last event that changed this status.
    position: int
    current: CurrentRun | None = None
    history: list[ArchivedIteration] = Field(default_factory=list)
    export: ExportState | None = None
