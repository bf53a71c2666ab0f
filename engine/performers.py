"""Performers: one per step kind. A performer does the side effect (a tool, a model call)
and returns an outcome or a `Waiting`; it records nothing. The run turns outcomes into
events. A new kind registers its performer here; the runner loop does not change."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from controlroom.domain.errors import ControlRoomError
from controlroom.domain.outcomes import AttemptReport, EventSpec, StepOutcome, Waiting
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.steps import AgentStep, ToolStep
from controlroom.engine.context import Context
from controlroom.engine.hooks import PartialHook
from controlroom.engine.steps import run_agent, run_tool
from controlroom.models.agents import AgentProfile
from controlroom.tools.stopping import call_stoppable
from controlroom.tools.workspace import Workspace


@dataclass
class Execution:
    """What one execution of a run shares across its steps."""

    ctx: Context
    run: Run
    #: Every step of this execution reads the same snapshot of the workspace files.
    workspace: Workspace
    #: Resolved once per execution: every agent call names its model explicitly.
    profiles: dict[str, AgentProfile]
    record_attempt: Callable[[AttemptReport], None]
    on_partial: PartialHook
    #: Records what the step did so far (its journal: an intent before its side effect, a
    #: loop's finished item) and commits it at once; the runner does both, never the step.
    journal: Callable[[list[EventSpec]], None] = lambda records: None


class Performer(Protocol):
    async def __call__(
        self, execution: Execution, instance: StepInstance
    ) -> StepOutcome | Waiting: ...


class UnknownStepKindError(ControlRoomError):
    def __init__(self, kind: str) -> None:
        super().__init__(f"no performer is registered for step kind '{kind}'")


class Performers:
    def __init__(self) -> None:
        self._by_kind: dict[str, Performer] = {}

    def register(self, kind: str, performer: Performer) -> None:
        self._by_kind[kind] = performer

    def unregister(self, kind: str) -> None:
        self._by_kind.pop(kind, None)

    def for_instance(self, instance: StepInstance) -> Performer:
        """The performer of the instance's kind; wrapped with its ladder rung's work when
        the flow marked it with one (consult, triage, a person: `engine/ladder_step.py`)."""
        performer = self.for_kind(instance.step.kind)
        if not instance.overrides.ladder:
            return performer
        from controlroom.engine.ladder_step import with_ladder

        return with_ladder(performer)

    def for_kind(self, kind: str) -> Performer:
        try:
            return self._by_kind[kind]
        except KeyError:
            raise UnknownStepKindError(kind) from None


async def perform_tool(execution: Execution, instance: StepInstance) -> StepOutcome:
    step = instance.step
    assert isinstance(step, ToolStep)
    # A slow tool in a worker thread: one that takes seconds never stalls the event loop
    # (and with it the live feeds of every other run in the server).
    if instance.overrides.args:  # the flow's args for this instance, over the step's own
        step = step.model_copy(update={"args": {**step.args, **instance.overrides.args}})
    if not execution.ctx.tools.is_slow(step.tool):
        # A cheap tool runs inline: the hop to a thread and back cost more than its work
        # (a trivial step was 27% slower for it).
        return run_tool(execution.ctx, execution.workspace, execution.run, step)
    stop = threading.Event()
    try:
        return await asyncio.to_thread(
            call_stoppable, stop, run_tool, execution.ctx, execution.workspace, execution.run, step
        )
    except asyncio.CancelledError:
        # The thread cannot be cancelled, and the process would wait for it at exit (a
        # tool over a big workspace ignored SIGTERM for its whole run): it stops at the
        # tool's next checkpoint instead. Nothing is recorded; resume performs the step.
        stop.set()
        raise


async def perform_agent(execution: Execution, instance: StepInstance) -> StepOutcome:
    step = instance.step
    assert isinstance(step, AgentStep)
    run_id = execution.run.id
    on_partial = execution.on_partial

    def partial(step_id: str, attempt: int, text: str) -> None:
        on_partial(run_id=run_id, step_id=step_id, attempt=attempt, text=text)

    overrides = instance.overrides
    if overrides.role and overrides.role != step.agent_archetype:
        # A loop's Showrunner woke another role its library allows for this step.
        step = step.model_copy(update={"agent_archetype": overrides.role})
    profile = execution.profiles[step.agent_archetype]
    if overrides.model:  # the flow names another model for this instance
        profile = execution.ctx.agents.with_model(profile, overrides.model)
    return await run_agent(
        execution.ctx,
        execution.run,
        step,
        profile,
        execution.record_attempt,
        partial,
        prompt_additions=overrides.prompt_additions,
    )


PERFORMERS = Performers()
PERFORMERS.register("tool", perform_tool)
PERFORMERS.register("agent", perform_agent)


def _register_write_file() -> None:
    from controlroom.engine.files import perform_write_file

    PERFORMERS.register("write_file", perform_write_file)


_register_write_file()


def _register_packet_kinds() -> None:
    from controlroom.engine.packet_agent import perform_for_each, perform_packet_agent

    PERFORMERS.register("packet_agent", perform_packet_agent)
    PERFORMERS.register("for_each", perform_for_each)


_register_packet_kinds()


async def perform_chief_review(execution: Execution, instance: StepInstance) -> StepOutcome:
    # Imported when a review runs: the Chief's module brings the manuscript tools (and
    # numpy) with it, which no other command needs at start-up.
    from controlroom.engine.review_step import perform_chief_review as perform

    return await perform(execution, instance)


def _register_conference() -> None:
    from controlroom.engine.conference_step import perform_conference

    PERFORMERS.register("conference", perform_conference)
    PERFORMERS.register("chief_review", perform_chief_review)


_register_conference()


def _register_eval_forks() -> None:
    from controlroom.engine.eval_step import perform_eval_forks

    PERFORMERS.register("eval_forks", perform_eval_forks)


_register_eval_forks()


def _register_showrunner() -> None:
    from controlroom.engine.showrunner_step import perform_showrunner

    PERFORMERS.register("showrunner", perform_showrunner)


_register_showrunner()


def _register_review_gate() -> None:
    from controlroom.engine.gate_step import perform_review_gate

    PERFORMERS.register("review_gate", perform_review_gate)


_register_review_gate()


async def perform_iteration_context(execution: Execution, instance: StepInstance) -> StepOutcome:
    from controlroom.engine.iterations import perform_iteration_context as perform

    return await perform(execution, instance)


PERFORMERS.register("iteration_context", perform_iteration_context)


def _register_child_run() -> None:
    from controlroom.engine.child_run_step import perform_child_run

    PERFORMERS.register("child_run", perform_child_run)


_register_child_run()


def _register_verify_loop() -> None:
    from controlroom.engine.sentinel_step import perform_verify_loop

    PERFORMERS.register("verify_loop", perform_verify_loop)


_register_verify_loop()
