"""A new kind of step, added from this test module alone: its spec, its performer, its
events. Nothing in the runner, the generic projections or the CLI is edited for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import DomainEvent, JournalRecord
from controlroom.domain.outcomes import EventSpec, StepOutcome, Waiting
from controlroom.domain.run import Run, RunStatus, StepInstance
from controlroom.domain.run_events import SlotWritten, StepWaiting
from controlroom.domain.steps import STEP_KINDS, StepSpec
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.performers import PERFORMERS, Execution
from controlroom.engine.policies import StepDelivery, bundled_policies
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.run_view import build_run_view
from tests.conftest import write_override

# -- the new kind: a step that asks a person and waits for the answer ---------------------


class ApprovalStep(StepSpec):
    kind: Literal["approval"] = "approval"
    question: str


class ApprovalRequested(DomainEvent):
    """The kind's own event, recorded in the run when the step completes."""

    type_name: ClassVar[str] = "TestApprovalRecorded"
    step_id: str
    question: str
    answer: str


@dataclass(frozen=True)
class ApprovalOutcome(StepOutcome):
    answer: str
    input_slot_refs: list[str]
    output_sha256: str

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        assert isinstance(step, ApprovalStep)
        text = json.dumps({"approved": self.answer == "yes", "answer": self.answer})
        return [
            (
                ApprovalRequested,
                {"step_id": step.step_id, "question": step.question, "answer": self.answer},
            ),
            (
                SlotWritten,
                {
                    "slot": step.output_slot,
                    "kind": "artifact",
                    "agent_id": "human",
                    "text": text,
                    "sha256": sha256_text(text),
                    "summary": f"answered {self.answer}",
                },
            ),
        ]

    def preview_source(self) -> str:
        return self.answer


async def ask_a_person(execution: Execution, instance: StepInstance) -> Waiting:
    return Waiting("waiting for a person to approve", {"approval_for": instance.instance_id})


# -- another aggregate, whose event the waiting step waits for -----------------------------


class ApprovalGiven(DomainEvent):
    type_name: ClassVar[str] = "TestApprovalGiven"
    run_id: str
    instance_id: str
    answer: str


class Approval(Aggregate):
    @classmethod
    def give(cls, at: datetime, run_id: str, instance_id: str, answer: str) -> Approval:
        approval = cls(f"appr_{run_id}_{instance_id}")
        approval._trigger(ApprovalGiven, at, run_id=run_id, instance_id=instance_id, answer=answer)
        return approval

    def apply(self, event: DomainEvent) -> None:
        return None


def route_approval(event: DomainEvent) -> tuple[str, str, StepOutcome] | None:
    assert isinstance(event, ApprovalGiven)
    outcome = ApprovalOutcome(event.answer, [], sha256_text(event.answer))
    return event.run_id, event.instance_id, outcome


DELIVER_APPROVALS = StepDelivery(
    "policy.test_approvals", frozenset({ApprovalGiven.type_name}), route_approval
)
RECIPE = {
    "recipe_id": "needs_approval",
    "phase_a": [
        {
            "step_id": "find",
            "tool": "file_locator",
            "args": {"search_criteria": "scene"},
            "output_slot": "found",
        }
    ],
    "phase_b": [
        {
            "kind": "approval",
            "step_id": "approve",
            "question": "Ship it?",
            "output_slot": "approval",
        }
    ],
    "dod": [
        {"check": "slot_field_equals", "slot": "approval", "field": "approved", "expected": True}
    ],
}


@pytest.fixture
def approval_kind() -> Iterator[None]:
    STEP_KINDS.register(ApprovalStep)
    PERFORMERS.register("approval", ask_a_person)
    yield
    PERFORMERS.unregister("approval")
    STEP_KINDS.unregister("approval")


def test_a_step_kind_from_a_test_module_waits_and_is_delivered_by_a_policy(
    workspace: Path, approval_kind: None
) -> None:
    write_override(workspace, "needs_approval.json", json.dumps(RECIPE))
    ctx = Context.open(workspace)
    service = RunService(ctx)
    followers = Followers(ctx.store, policies=[*bundled_policies(), DELIVER_APPROVALS])

    run = asyncio.run(service.execute(service.start(RunRequest("needs_approval", {}))))
    assert run.status == RunStatus.RUNNING and run.is_waiting
    waiting = [e for e in ctx.store.stream(run.id) if isinstance(e, StepWaiting)]
    assert [(w.instance_id, w.awaiting) for w in waiting] == [
        ("approve", {"approval_for": "approve"})
    ]
    # Resuming a waiting run does nothing: only the delivery moves it on.
    assert asyncio.run(service.resume(run.id)).is_waiting

    at = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    ctx.store.save(Approval.give(at, run.id, "approve", "yes"))
    assert followers.catch_up() > 0
    assert followers.catch_up() == 0  # delivered once

    finished = asyncio.run(service.resume(run.id))
    assert finished.status == RunStatus.DONE, finished.error
    types = [e.type_name for e in ctx.store.stream(run.id)]
    assert "TestApprovalRecorded" in types
    view = build_run_view(ctx.store.stream(run.id)).consolidated()
    assert [(s["step_id"], s["status"]) for s in view["steps"]] == [
        ("find", "done"),
        ("approve", "done"),
    ]
    assert view["cache_summary"]["approval"]["type"] == "artifact"
    ctx.close()


def test_the_recipe_schema_and_snapshot_carry_a_registered_kind(approval_kind: None) -> None:
    from controlroom.domain.recipe import Recipe

    recipe = Recipe.model_validate(RECIPE)
    assert isinstance(recipe.phase_b[0], ApprovalStep)
    snapshot: dict[str, Any] = recipe.snapshot()
    assert snapshot["phase_b"][0]["kind"] == "approval"  # not the phase's default: kept
    assert "kind" not in snapshot["phase_a"][0]  # the default: written as appendix B has it
    assert Recipe.model_validate(snapshot) == recipe


def test_an_unregistered_kind_is_a_recipe_error_naming_the_path() -> None:
    from controlroom.domain.errors import RecipeInvalidError
    from controlroom.domain.recipe_check import parse_recipe

    with pytest.raises(RecipeInvalidError) as raised:
        parse_recipe(RECIPE, "r.json")
    assert any(p.json_path.startswith("$.phase_b[0]") for p in raised.value.problems)


def test_a_step_can_run_more_than_once_as_numbered_instances() -> None:
    from controlroom.domain.flow import instance_id

    assert [instance_id("draft", n) for n in range(3)] == ["draft", "draft#2", "draft#3"]


# -- a kind that keeps a journal: records made while it runs, committed by the runner ------


class CountStep(StepSpec):
    kind: Literal["count"] = "count"
    upto: int


class Counted(JournalRecord):
    """One number counted: the kind's journal record (its own event, nothing in `Run`)."""

    type_name: ClassVar[str] = "TestCounted"
    number: int


@dataclass(frozen=True)
class CountOutcome(StepOutcome):
    numbers: list[int]
    input_slot_refs: list[str]
    output_sha256: str

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        text = json.dumps(self.numbers)
        slot = {"slot": step.output_slot, "kind": "artifact", "agent_id": "counter"}
        return [(SlotWritten, {**slot, "text": text, "sha256": sha256_text(text), "summary": text})]

    def preview_source(self) -> str:
        return json.dumps(self.numbers)


class Stop(BaseException):
    """Stands for the process dying mid-step."""


COUNTED_IN_THIS_PROCESS: list[int] = []
STOP_AFTER: list[int] = []


async def count(execution: Execution, instance: StepInstance) -> CountOutcome:
    step = instance.step
    assert isinstance(step, CountStep)
    done = [r.number for r in execution.run.journal_of(instance.instance_id, Counted)]
    for number in range(len(done) + 1, step.upto + 1):
        COUNTED_IN_THIS_PROCESS.append(number)
        ids = {"step_id": step.step_id, "instance_id": instance.instance_id}
        execution.journal([(Counted, {**ids, "number": number})])
        done.append(number)
        if STOP_AFTER and number == STOP_AFTER[0]:
            raise Stop
    text = json.dumps(done)
    return CountOutcome(done, [], sha256_text(text))


def test_a_kind_keeps_a_journal_the_runner_commits_and_a_resumed_step_reads(
    workspace: Path,
) -> None:
    STEP_KINDS.register(CountStep)
    PERFORMERS.register("count", count)
    try:
        recipe = {
            "recipe_id": "counting",
            "phase_b": [{"kind": "count", "step_id": "c", "output_slot": "n", "upto": 5}],
        }
        write_override(workspace, "counting.json", json.dumps(recipe))
        ctx = Context.open(workspace)
        service = RunService(ctx)
        run = service.start(RunRequest("counting", {}))
        COUNTED_IN_THIS_PROCESS.clear()
        STOP_AFTER[:] = [3]
        with pytest.raises(Stop):
            asyncio.run(service.execute(run))
        STOP_AFTER.clear()
        # Each record was committed when it was made: a fresh load knows 1, 2 and 3.
        loaded = ctx.store.load(Run, run.id)
        assert loaded is not None
        assert [r.number for r in loaded.journal_of("c", Counted)] == [1, 2, 3]

        finished = asyncio.run(service.resume(run.id))
        assert finished.status == RunStatus.DONE, finished.error
        assert COUNTED_IN_THIS_PROCESS == [1, 2, 3, 4, 5]  # nothing counted twice
        assert finished.slot_values["n"] == [1, 2, 3, 4, 5]
        stored = [e.number for e in ctx.store.stream(run.id) if isinstance(e, Counted)]
        assert stored == [1, 2, 3, 4, 5]
        ctx.close()
    finally:
        PERFORMERS.unregister("count")
        STEP_KINDS.unregister("count")
