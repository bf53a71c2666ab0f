"""The Run aggregate: one execution of a recipe, decided step by step from its events."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import JsonValue

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import preview
from controlroom.domain.errors import RunStateError
from controlroom.domain.events import DomainEvent
from controlroom.domain.recipe import AgentStep, Recipe, ToolStep
from controlroom.domain.refs import task_context
from controlroom.domain.run_events import (
    AgentResponded,
    DodChecked,
    DodResult,
    ModelAttemptFailed,
    ReceiptIssued,
    RoutingDecision,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunResumed,
    RunStarted,
    SlotWritten,
    StepCompleted,
    StepFailed,
    StepStarted,
    TaskSpec,
    TokenUsage,
)


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool produced, computed by the engine before any event is made."""

    receipt_id: str
    args: dict[str, JsonValue]
    input_slot_refs: list[str]
    output: JsonValue
    output_sha256: str
    summary: str
    duration_ms: float


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent answered, with everything needed to audit the call."""

    agent_id: str
    tier: str
    provider: str
    model: str
    prompt_variant: str
    prompt_hash: str
    input_slot_refs: list[str]
    output: str
    output_sha256: str
    summary: str
    usage: TokenUsage
    latency_ms: float
    attempts: int = 1
    cost_usd: float | None = None


@dataclass(frozen=True)
class AttemptFailure:
    attempt: int
    provider: str
    model: str
    kind: str
    status: int | None
    message: str
    will_retry: bool
    retry_in_s: float


def slot_value_of_text(text: str) -> Any:
    """An artifact's value for `$ref` navigation: its JSON if it is a JSON document."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


class Run(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.status = RunStatus.PENDING
        self.phase: str | None = None
        self.current_step_index = 0
        self.total_steps = 0
        self.recipe: Recipe | None = None
        self.task = TaskSpec(description="")
        self.session_id = ""
        self.trace_id = ""
        self.error: str | None = None
        self.step_in_progress: int | None = None
        self.completed_steps: set[int] = set()
        self.slot_values: dict[str, Any] = {}
        #: What an agent is shown of each slot: a pointer's summary, an artifact's text.
        self.slot_texts: dict[str, str] = {}
        self.receipt_outputs: dict[str, Any] = {}
        self.dod_results: list[DodResult] | None = None

    # -- commands ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        run_id: str,
        at: datetime,
        recipe: Recipe,
        task: TaskSpec,
        routing: RoutingDecision | None,
        session_id: str,
        trace_id: str,
    ) -> Run:
        run = cls(run_id)
        run._trigger(
            RunStarted,
            at,
            recipe_id=recipe.recipe_id,
            recipe=recipe.snapshot(),
            fingerprint=recipe.fingerprint(),
            task=task,
            routing=routing,
            session_id=session_id,
            trace_id=trace_id,
            total_steps=recipe.total_steps,
        )
        run._start_step(0, at)
        return run

    def next_step(self) -> tuple[int, ToolStep | AgentStep] | None:
        """The step the engine must perform now, or None when all steps are done."""
        self._check_running("advance")
        if self.step_in_progress is None:
            return None
        return self.step_in_progress, self.recipe_steps[self.step_in_progress]

    def resume(self, at: datetime) -> None:
        self._check_running("resume")
        self._trigger(RunResumed, at, step_index=self.current_step_index)

    def complete_tool_step(self, at: datetime, outcome: ToolOutcome) -> None:
        index, step = self._expect_step(ToolStep)
        assert isinstance(step, ToolStep)
        self._trigger(
            ReceiptIssued,
            at,
            receipt_id=outcome.receipt_id,
            session_id=self.session_id,
            step_id=step.step_id,
            tool=step.tool,
            args=outcome.args,
            input_slot_refs=outcome.input_slot_refs,
            output=outcome.output,
            output_sha256=outcome.output_sha256,
            summary=outcome.summary,
            duration_ms=outcome.duration_ms,
        )
        self._trigger(
            SlotWritten,
            at,
            slot=step.output_slot,
            kind="pointer",
            receipt_id=outcome.receipt_id,
            sha256=outcome.output_sha256,
            summary=outcome.summary,
        )
        self._finish_step(
            at, index, step, outcome.output_sha256, outcome.summary, outcome.input_slot_refs
        )

    def complete_agent_step(self, at: datetime, outcome: AgentOutcome) -> None:
        index, step = self._expect_step(AgentStep)
        assert isinstance(step, AgentStep)
        self._trigger(
            AgentResponded,
            at,
            step_id=step.step_id,
            agent_archetype=step.agent_archetype,
            agent_id=outcome.agent_id,
            tier=outcome.tier,
            provider=outcome.provider,
            model=outcome.model,
            prompt_type=step.prompt_type,
            prompt_variant=outcome.prompt_variant,
            prompt_hash=outcome.prompt_hash,
            input_slot_refs=outcome.input_slot_refs,
            output=outcome.output,
            output_sha256=outcome.output_sha256,
            usage=outcome.usage,
            latency_ms=outcome.latency_ms,
            attempts=outcome.attempts,
            cost_usd=outcome.cost_usd,
        )
        self._trigger(
            SlotWritten,
            at,
            slot=step.output_slot,
            kind="artifact",
            agent_id=outcome.agent_id,
            text=outcome.output,
            sha256=outcome.output_sha256,
            summary=outcome.summary,
        )
        self._finish_step(
            at, index, step, outcome.output_sha256, outcome.output, outcome.input_slot_refs
        )

    def record_model_attempt(self, at: datetime, failure: AttemptFailure) -> None:
        _, step = self._expect_step(AgentStep)
        self._trigger(
            ModelAttemptFailed,
            at,
            step_id=step.step_id,
            attempt=failure.attempt,
            provider=failure.provider,
            model=failure.model,
            kind=failure.kind,
            status=failure.status,
            message=failure.message,
            will_retry=failure.will_retry,
            retry_in_s=failure.retry_in_s,
        )

    def fail_step(self, at: datetime, error_type: str, error: str) -> None:
        """A step failed: the pipeline halts and the user decides (guarantee 6)."""
        index, step = self._expect_step(ToolStep, AgentStep)
        self._trigger(
            StepFailed,
            at,
            step_index=index,
            step_id=step.step_id,
            error_type=error_type,
            error=error,
        )
        self._trigger(
            RunFailed, at, error=f"step '{step.step_id}' failed: {error}", step_id=step.step_id
        )

    def record_dod(self, at: datetime, results: list[DodResult]) -> None:
        self._check_running("check its Definition of Done")
        if self.step_in_progress is not None:
            raise RunStateError(self.id, "still running steps", "check its Definition of Done")
        passed = all(r.passed for r in results)
        self._trigger(DodChecked, at, passed=passed, results=results)
        if passed:
            self._trigger(RunCompleted, at)
        else:
            failed = sum(not r.passed for r in results)
            self._trigger(RunFailed, at, error=f"Definition of Done: {failed} check(s) failed")

    def cancel(self, at: datetime, reason: str) -> None:
        self._check_running("cancel")
        self._trigger(RunCancelled, at, reason=reason, step_index=self.current_step_index)

    # -- queries ----------------------------------------------------------------------------

    @property
    def recipe_steps(self) -> list[ToolStep | AgentStep]:
        assert self.recipe is not None
        return self.recipe.steps

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    def task_context(self) -> dict[str, Any]:
        return task_context(self.task.description, self.task.args, self.task.session_plan_task_id)

    # -- internals --------------------------------------------------------------------------

    def _check_running(self, wanted: str) -> None:
        if self.status != RunStatus.RUNNING:
            raise RunStateError(self.id, self.status.value, wanted)

    def _expect_step(self, *kinds: type) -> tuple[int, ToolStep | AgentStep]:
        current = self.next_step()
        if current is None:
            raise RunStateError(self.id, "past its last step", "complete a step")
        index, step = current
        if not isinstance(step, kinds) or index in self.completed_steps:
            raise RunStateError(self.id, f"at step {index}", "complete that step again")
        return index, step

    def _start_step(self, index: int, at: datetime) -> None:
        if index >= self.total_steps:
            return
        step = self.recipe_steps[index]
        is_tool = isinstance(step, ToolStep)
        self._trigger(
            StepStarted,
            at,
            step_index=index,
            step_id=step.step_id,
            phase="a" if is_tool else "b",
            tool=step.tool if isinstance(step, ToolStep) else None,
            agent_archetype=step.agent_archetype if isinstance(step, AgentStep) else None,
            output_slot=step.output_slot,
        )

    def _finish_step(
        self,
        at: datetime,
        index: int,
        step: ToolStep | AgentStep,
        sha: str,
        text: str,
        input_refs: list[str],
    ) -> None:
        self._trigger(
            StepCompleted,
            at,
            step_index=index,
            step_id=step.step_id,
            output_slot=step.output_slot,
            output_hash=f"sha256:{sha}",
            output_preview=preview(text),
            input_slot_refs=input_refs,
        )
        # Recorded in the same commit as this completion, so one commit per step suffices
        # and readers still see which step is running.
        self._start_step(index + 1, at)

    # -- evolution --------------------------------------------------------------------------

    def apply(self, event: DomainEvent) -> None:
        handler = _APPLIERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_started(self, e: RunStarted) -> None:
        self.status = RunStatus.RUNNING
        self.recipe = Recipe.model_validate(e.recipe)
        self.task = e.task
        self.session_id = e.session_id
        self.trace_id = e.trace_id
        self.total_steps = e.total_steps

    def _on_step_started(self, e: StepStarted) -> None:
        self.step_in_progress = e.step_index
        self.current_step_index = e.step_index
        self.phase = e.phase

    def _on_receipt(self, e: ReceiptIssued) -> None:
        self.receipt_outputs[e.receipt_id] = e.output

    def _on_slot(self, e: SlotWritten) -> None:
        if e.kind == "pointer":
            assert e.receipt_id is not None
            self.slot_values[e.slot] = self.receipt_outputs[e.receipt_id]
            self.slot_texts[e.slot] = e.summary
        else:
            self.slot_values[e.slot] = slot_value_of_text(e.text or "")
            self.slot_texts[e.slot] = e.text or ""

    def _on_step_completed(self, e: StepCompleted) -> None:
        self.completed_steps.add(e.step_index)
        self.step_in_progress = None

    def _on_dod(self, e: DodChecked) -> None:
        self.dod_results = list(e.results)

    def _on_completed(self, e: RunCompleted) -> None:
        self._finish(RunStatus.DONE, None)

    def _on_failed(self, e: RunFailed) -> None:
        self._finish(RunStatus.FAILED, e.error)

    def _on_cancelled(self, e: RunCancelled) -> None:
        self._finish(RunStatus.CANCELLED, f"cancelled: {e.reason}")

    def _finish(self, status: RunStatus, error: str | None) -> None:
        self.status = status
        self.error = error
        self.phase = None
        self.step_in_progress = None


_APPLIERS: dict[type[DomainEvent], Any] = {
    RunStarted: Run._on_started,
    StepStarted: Run._on_step_started,
    ReceiptIssued: Run._on_receipt,
    SlotWritten: Run._on_slot,
    StepCompleted: Run._on_step_completed,
    DodChecked: Run._on_dod,
    RunCompleted: Run._on_completed,
    RunFailed: Run._on_failed,
    RunCancelled: Run._on_cancelled,
}
