"""The decision seam: after every step, done or failed, the run's flow decides what follows.
Flows are added from this module alone (the runner is not edited); their answers other than
linear's are recorded as `FlowDecided` events that replay and resume read, never recompute."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controlroom.domain.errors import ModelCallError, RecipeInvalidError, ToolError
from controlroom.domain.flow import (
    FLOWS,
    LINEAR,
    FailRun,
    Overrides,
    RunStep,
    RunView,
    StepsDone,
)
from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.recipe_check import validate_recipe
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentResponded,
    ModelRequestRecorded,
    StepCompleted,
    StepFailed,
    StepStarted,
)
from controlroom.engine.context import Context
from controlroom.engine.runner import failure_kind
from controlroom.engine.service import RunRequest, RunService
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override

BUNDLED = Path(__file__).resolve().parent.parent / "recipes"

# -- flows of this module ------------------------------------------------------------------


class RetryOnceFixed:
    """A failed step runs once more, with an arg that mends it; a second failure fails."""

    name = "test_retry_once"
    asked = 0

    def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
        RetryOnceFixed.asked += 1
        failure = view.failure
        if failure is None:
            return LINEAR.decide(view)
        if view.times_started[failure.step_id] >= 2:
            return FailRun(f"'{failure.step_id}' failed twice", outcome=11)
        return RunStep(
            failure.index,
            Overrides(args={"fixed": True}),
            reason=f"{failure.kind} failure: once more, mended",
        )


class RedraftWithFeedback:
    """After the first draft, the writer drafts again with a reviewer's note."""

    name = "test_redraft"

    def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
        last = view.history[-1] if view.history else None
        if view.failure is None and last is not None and last.instance_id == "draft":
            note = view.options.get("note", "")
            return RunStep(last.index, Overrides(prompt_additions=(str(note),)), "feedback")
        return LINEAR.decide(view)


class Forever:
    """Chooses the first step again and again: bounded by the run, not by itself."""

    name = "test_forever"

    def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
        return FailRun("failed") if view.failure else RunStep(0)


class Broken:
    name = "test_broken"

    def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
        raise KeyError("no such slot")


class FlakyArgs(ToolArgs):
    fixed: bool = False


class FlakyTool:
    name: ClassVar[str] = "flaky"
    description: ClassVar[str] = "fails unless told it is fixed"
    args_model: ClassVar[type[ToolArgs]] = FlakyArgs

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        if not args.fixed:
            raise ToolError(self.name, "not fixed yet")
        return ToolResult(output={"ok": True}, summary="fixed")


@pytest.fixture(autouse=True)
def flows() -> Iterator[None]:
    for flow in (RetryOnceFixed(), RedraftWithFeedback(), Forever(), Broken()):
        FLOWS.register(flow)
    yield
    for name in ("test_retry_once", "test_redraft", "test_forever", "test_broken"):
        FLOWS.unregister(name)


def flaky_recipe(flow: Any) -> dict[str, Any]:
    return {
        "recipe_id": "flaky",
        "flow": flow,
        "phase_a": [
            {"step_id": "check", "tool": "flaky", "output_slot": "checked"},
            {
                "step_id": "outline",
                "tool": "outline_analyzer",
                "args": {"outline_path": "Story/SCN-outline.md", "focus": "scene 4"},
                "output_slot": "outline",
            },
        ],
    }


def start(workspace: Path, recipe: dict[str, Any]) -> tuple[Context, RunService, Run]:
    write_override(workspace, f"{recipe['recipe_id']}.json", json.dumps(recipe))
    tools = ToolRegistry.default(with_plugins=False).with_tools(FlakyTool())
    ctx = Context.open(workspace, tools=tools)
    service = RunService(ctx)
    return ctx, service, service.start(RunRequest(recipe["recipe_id"], {"scene_number": 4}))


def events(ctx: Context, run_id: str, kind: type[Any]) -> list[Any]:
    return [e for e in ctx.store.stream(run_id) if isinstance(e, kind)]


# -- tests ----------------------------------------------------------------------------------


def test_a_flow_from_a_test_module_retries_a_failed_step_with_an_override(
    workspace: Path,
) -> None:
    ctx, service, run = start(workspace, flaky_recipe("test_retry_once"))
    run = asyncio.run(service.execute(run))

    assert run.status == RunStatus.DONE, run.error
    (failed,) = events(ctx, run.id, StepFailed)
    assert failed.instance_id == "check" and "not fixed yet" in failed.error
    (decided,) = events(ctx, run.id, FlowDecided)
    assert decided.flow == "test_retry_once" and decided.after_instance == "check"
    assert decided.failure_kind == "performer"
    assert (decided.choice, decided.instance_id) == ("check", "check#2")
    assert decided.overrides == {"args": {"fixed": True}}
    assert decided.candidates == ["check", "outline"]
    assert decided.context_sha256.startswith("sha256:")
    started = [e.instance_id for e in events(ctx, run.id, StepStarted)]
    assert started == ["check", "check#2", "outline"]
    completed = [e.instance_id for e in events(ctx, run.id, StepCompleted)]
    assert completed == ["check#2", "outline"]
    ctx.close()


def test_resume_and_replay_read_the_recorded_decision_and_never_ask_the_flow_again(
    workspace: Path,
) -> None:
    ctx, service, run = start(workspace, flaky_recipe("test_retry_once"))
    run = asyncio.run(service.execute(run))
    asked = RetryOnceFixed.asked
    loaded = ctx.store.load(Run, run.id)
    assert loaded is not None
    assert RetryOnceFixed.asked == asked  # rebuilding the run asks nothing
    assert [d.choice for d in loaded.decisions] == ["check"]
    assert loaded.overrides["check#2"] == Overrides(args={"fixed": True})
    ctx.close()


def test_a_flow_fails_the_run_with_its_outcome_when_the_retry_fails_too(
    workspace: Path,
) -> None:
    recipe = flaky_recipe("test_retry_once")
    recipe["phase_a"][0]["args"] = {}
    # The override is merged over the args: a step whose own args say `fixed: false`
    # is mended by it; here a tool that always fails stands for a retry that fails.

    class AlwaysFails(FlakyTool):
        def run(self, args: Any, workspace: Workspace) -> ToolResult:
            raise ToolError(self.name, "still broken")

    write_override(workspace, "flaky.json", json.dumps(recipe))
    tools = ToolRegistry.default(with_plugins=False).with_tools(AlwaysFails())
    ctx = Context.open(workspace, tools=tools)
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("flaky", {}))))
    assert run.status == RunStatus.FAILED
    assert run.error == "'check' failed twice"
    assert [e.instance_id for e in events(ctx, run.id, StepFailed)] == ["check", "check#2"]
    choices = [(d.choice, d.outcome) for d in events(ctx, run.id, FlowDecided)]
    assert choices == [("check", None), ("fail", 11)]
    ctx.close()


def test_prompt_additions_reach_the_model_in_the_user_message(workspace: Path) -> None:
    recipe = json.loads((BUNDLED / "creative_draft_scene.json").read_text())
    note = "Reviewer: open on the storm, not the council."
    recipe["flow"] = {"policy": "test_redraft", "options": {"note": note}}
    ctx, service, run = start(workspace, recipe)
    run = asyncio.run(service.execute(run))

    assert run.status == RunStatus.DONE, run.error
    drafts = [e for e in events(ctx, run.id, AgentResponded) if e.step_id == "draft"]
    assert len(drafts) == 2
    requests = {
        e.ref: RunService(ctx).request_body(e) for e in events(ctx, run.id, ModelRequestRecorded)
    }
    first, second = (json.dumps(requests[d.request_ref]) for d in drafts)
    assert note not in first and note in second
    (decided,) = events(ctx, run.id, FlowDecided)
    assert decided.instance_id == "draft#2" and decided.overrides == {"prompt_additions": [note]}
    ctx.close()


def test_a_model_override_must_name_a_configured_provider(workspace: Path) -> None:
    class OtherModel(RedraftWithFeedback):
        name = "test_other_model"

        def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
            decision = super().decide(view)
            if isinstance(decision, RunStep) and decision.overrides:
                return RunStep(decision.index, Overrides(model="nowhere:big-model"))
            return decision

    FLOWS.register(OtherModel())
    try:
        recipe = json.loads((BUNDLED / "creative_draft_scene.json").read_text())
        recipe["flow"] = "test_other_model"
        ctx, service, run = start(workspace, recipe)
        run = asyncio.run(service.execute(run))
        assert run.status == RunStatus.FAILED
        (failed,) = events(ctx, run.id, StepFailed)
        assert failed.instance_id == "draft#2" and "'nowhere' is not configured" in failed.error
        ctx.close()
    finally:
        FLOWS.unregister("test_other_model")


def test_a_flow_that_chooses_a_step_forever_is_stopped_and_says_why(workspace: Path) -> None:
    recipe = flaky_recipe({"policy": "test_forever", "options": {"max_instances_per_step": 3}})
    recipe["phase_a"] = recipe["phase_a"][1:]
    ctx, service, run = start(workspace, recipe)
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.FAILED
    assert "the limit is 3" in (run.error or "")
    assert [e.instance_id for e in events(ctx, run.id, StepCompleted)] == [
        "outline",
        "outline#2",
        "outline#3",
    ]
    assert events(ctx, run.id, FlowDecided)[-1].choice == "fail"
    ctx.close()


def test_a_flow_that_raises_fails_the_run_instead_of_the_process(workspace: Path) -> None:
    recipe = flaky_recipe("test_broken")
    recipe["phase_a"] = recipe["phase_a"][1:]
    ctx, _service, run = start(workspace, recipe)
    assert run.status == RunStatus.FAILED  # asked for the first step at the start
    assert "could not decide" in (run.error or "") and "KeyError" in (run.error or "")
    ctx.close()


def test_linear_recipes_record_no_decision(workspace: Path) -> None:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = asyncio.run(
        service.execute(service.start(RunRequest("Draft scene 4 from the outline", {})))
    )
    assert run.status == RunStatus.DONE
    assert not events(ctx, run.id, FlowDecided)
    ctx.close()


def test_an_unknown_flow_is_a_recipe_error_naming_the_path() -> None:
    recipe = flaky_recipe({"policy": "nope"})
    with pytest.raises(RecipeInvalidError) as raised:
        validate_recipe(recipe, "flaky.json", ["flaky", "outline_analyzer"], [])
    (problem,) = raised.value.problems
    assert problem.json_path == "$.flow.policy" and "'nope'" in problem.message


def test_failures_are_told_apart_by_kind() -> None:
    from controlroom.domain.errors import AgentOutputInvalidError

    assert failure_kind(AgentOutputInvalidError("s", "c", 3, ["bad"])) == "contract"
    assert failure_kind(ModelCallError("server_error", "boom", 500)) == "transport"
    assert failure_kind(ToolError("t", "boom")) == "performer"


def test_every_run_records_who_started_it(workspace: Path) -> None:
    from controlroom.domain.run_events import RunOrigin, RunStarted

    ctx, _service, run = start(workspace, flaky_recipe("test_retry_once"))
    (started,) = events(ctx, run.id, RunStarted)
    assert started.origin == RunOrigin(kind="user", via="cli")
    assert run.origin.kind == "user"
    ctx.close()


@pytest.mark.parametrize("limit", ["3", 0, 101, True])
def test_a_flows_step_limit_must_be_a_whole_number_within_bounds(limit: Any) -> None:
    recipe = flaky_recipe({"policy": "linear", "options": {"max_instances_per_step": limit}})
    with pytest.raises(RecipeInvalidError) as raised:
        validate_recipe(recipe, "flaky.json", ["flaky", "outline_analyzer"], [])
    (problem,) = raised.value.problems
    assert problem.json_path == "$.flow.options.max_instances_per_step"
