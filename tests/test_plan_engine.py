"""Session plans through the application: the Chief's plan, approval, dependency order,
policies that start each task once, the Chief's reviews, scoping answers, bad Chief replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.issue import IssueOpened
from controlroom.domain.packets import TaskPacket
from controlroom.domain.plan import PlanStatus, TaskState
from controlroom.domain.plan_errors import ChiefReplyError, PlanInputError, PlanStateError
from controlroom.domain.plan_events import TaskFinished, TaskReviewed, TaskRunRequested
from controlroom.domain.run import Run
from controlroom.domain.run_events import RunStarted, TokenUsage
from controlroom.engine.chief import workspace_scenes
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.plan_driver import drive
from controlroom.engine.plans import PlanService
from controlroom.models.agents import AgentDirectory
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse, TextSink

INTENT = (
    "Write scene 4, then check consistency of scenes 3-4 against canon, and a foreshadowing audit"
)


def create(ctx: Context, intent: str = INTENT) -> Any:
    return asyncio.run(PlanService(ctx).create(intent))


def test_the_chief_plans_the_intent_and_the_system_routes_each_task(ctx: Context) -> None:
    plan = create(ctx)
    assert plan.status == PlanStatus.DRAFT
    tasks = [plan.tasks[t] for t in plan.order]
    assert [(t.description, t.recipe_id, t.deps) for t in tasks] == [
        ("Write scene 4", "creative_draft_scene", []),
        ("Check consistency of scenes 3-4 against canon", "analytical_consistency", [1]),
        ("A foreshadowing audit", None, []),
    ]
    assert tasks[0].recipe is not None and tasks[0].recipe["recipe_id"] == "creative_draft_scene"
    assert plan.states() == {
        1: TaskState.PENDING,
        2: TaskState.BLOCKED,
        3: TaskState.NEEDS_SCOPING,
    }


def test_a_plan_runs_in_dependency_order_and_waits_for_the_scoping_answer(ctx: Context) -> None:
    service = PlanService(ctx)
    plan = create(ctx)
    with pytest.raises(PlanStateError, match="approve it first"):
        service.start(plan.id)
    service.approve(plan.id)
    service.start(plan.id)
    followers = Followers(ctx.store)
    plan = asyncio.run(drive(ctx, plan.id, followers))
    assert plan.states() == {1: TaskState.DONE, 2: TaskState.DONE, 3: TaskState.NEEDS_SCOPING}
    assert plan.status == PlanStatus.RUNNING  # waiting on the user, not finished
    assert list((ctx.workspace.root / "Story" / "Scenes").glob("SCN-04-*"))
    service.answer(plan.id, 3, "the missing ledger page, scenes 3-4")
    plan = asyncio.run(drive(ctx, plan.id, followers))
    assert plan.status == PlanStatus.DONE
    events = ctx.store.stream(plan.id)
    requested = [e.task_id for e in events if isinstance(e, TaskRunRequested)]
    assert requested == [1, 2, 3]  # each task's run asked for once, in dependency order
    reviews = [e for e in events if isinstance(e, TaskReviewed)]
    assert sorted(r.task_id for r in reviews) == [1, 2, 3]
    for task_id, run_id in plan.run_ids.items():
        started = ctx.store.stream(run_id)[0]
        assert isinstance(started, RunStarted)
        assert started.task.plan_id == plan.id
        assert started.task.session_plan_task_id == task_id
        origin = started.origin
        assert origin is not None and origin.kind == "plan_task"
        assert (origin.plan_id, origin.task_id, origin.policy) == (
            plan.id,
            task_id,
            "policy.plan_runs",
        )


def test_a_task_whose_run_fails_keeps_its_dependants_blocked(ctx: Context) -> None:
    service = PlanService(ctx)
    # Scene 3's validation runs, a consistency check waits for it; cancel the first run.
    plan = create(ctx, "Validate scene 3 against the outline, then check consistency of scene 3")
    service.approve(plan.id)
    service.start(plan.id)
    followers = Followers(ctx.store)
    followers.catch_up()
    first = service.load(plan.id).run_ids[1]
    from controlroom.engine.service import RunService

    RunService(ctx).cancel(first, "stop")
    plan = asyncio.run(drive(ctx, plan.id, followers))
    assert plan.states() == {1: TaskState.FAILED, 2: TaskState.BLOCKED}
    assert plan.status == PlanStatus.FAILED
    finished = [e for e in ctx.store.stream(plan.id) if isinstance(e, TaskFinished)]
    assert "cancelled" in finished[0].detail


def test_reacting_twice_never_starts_a_task_twice(ctx: Context) -> None:
    service = PlanService(ctx)
    plan = create(ctx)
    service.approve(plan.id)
    service.start(plan.id)
    assert Followers(ctx.store).catch_up() >= 1
    assert Followers(ctx.store).catch_up() == 0
    run = ctx.store.load(Run, service.load(plan.id).run_ids[1])
    assert run is not None and run.recipe is not None


def test_an_ambiguous_scene_becomes_a_clarify_questionnaire(ctx: Context) -> None:
    service = PlanService(ctx)
    plan = create(ctx, "let's do scene 3")
    task = plan.tasks[1]
    assert task.recipe_id is None and task.scoping_question
    assert "Write scene 3" in task.choices and len(task.choices) >= 3
    with pytest.raises(PlanInputError, match="choose 1 to"):
        service.answer(plan.id, 1, "99")
    # Seed 001 PH-2: the questionnaire is a valid clarify packet; the answer, a task packet
    # for the agent that acts first, whose parent is the questionnaire.
    clarify = TaskPacket.model_validate(task.packet)
    assert clarify.intent == "clarify" and clarify.choices == task.choices
    plan = service.answer(
        plan.id, 1, str(task.choices.index("Validate scene 3 against the outline") + 1)
    )
    assert plan.tasks[1].recipe_id == "analytical_scene_validate"
    follow = TaskPacket.model_validate(plan.tasks[1].packet)
    assert follow.intent == "check" and follow.parent_packet_id == clarify.packet_id
    assert follow.target == plan.tasks[1].recipe["phase_b"][0]["agent_archetype"]

    nowhere = create(ctx, "let's do scene 40").tasks[1]
    assert nowhere.choices == [] and nowhere.packet is None
    assert "There is no scene 40 in this workspace (scenes: 1, 2, 3, 4)" in (
        nowhere.scoping_question or ""
    )

    missing = create(ctx, "Write scene 9")
    assert missing.tasks[1].recipe_id is None
    assert "no scene 9" in (missing.tasks[1].scoping_question or "")
    assert missing.tasks[1].choices == ["Write scene 4"]  # the outline's undrafted scene

    # work no recipe can do is said to be out of reach, not only "scope it"
    cover = create(ctx, "Design a cover for the book").tasks[1]
    assert "none makes images" in (cover.scoping_question or "")
    # work another command starts names that command
    team = create(ctx, "Get the whole team to weigh in on the ending").tasks[1]
    assert 'controlroom conference "QUESTION"' in (team.scoping_question or "")


def test_editing_a_task_routes_it_again(ctx: Context) -> None:
    service = PlanService(ctx)
    plan = create(ctx)
    plan = service.edit(plan.id, 3, "Prose review of scene 2")
    assert plan.tasks[3].recipe_id == "analytical_prose"
    assert plan.task_state(3) == TaskState.PENDING


class ScriptedChief:
    """A model that answers the Chief with the given replies, in order."""

    provider = "offline"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return OfflineModel().request_body(request)

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.prompts.append(request.prompt)
        return ModelResponse(text=self.replies.pop(0), usage=TokenUsage())


def with_model(ctx: Context, model: ScriptedChief) -> Context:
    ctx.agents = AgentDirectory(clients={"offline": model})
    return ctx


def test_a_real_models_fenced_reply_with_prose_is_accepted(ctx: Context) -> None:
    plan = {
        "tasks": [{"id": 1, "description": "Write scene 4", "deps": [], "dod": "exists"}],
        "summary": "one scene",
    }
    model = ScriptedChief("Sure! Here is the plan:\n```json\n" + json.dumps(plan) + "\n```")
    created = create(with_model(ctx, model))
    assert created.tasks[1].recipe_id == "creative_draft_scene"


def test_a_chief_reply_that_is_not_a_plan_is_retried_twice_then_refused(ctx: Context) -> None:
    cyclic = {
        "tasks": [
            {"id": 1, "description": "Write scene 4", "deps": [2], "dod": ""},
            {"id": 2, "description": "Validate scene 4", "deps": [1], "dod": ""},
        ],
        "summary": "",
    }
    model = ScriptedChief("I think you should write.", json.dumps(cyclic), '{"tasks": "many"}')
    with pytest.raises(ChiefReplyError, match="after 3 attempt"):
        create(with_model(ctx, model))
    assert "cycle" in model.prompts[2]  # the stricter prompt names what was wrong
    assert ctx.store.max_position() in (0, None)  # nothing recorded


def test_the_plan_view_matches_the_plan_and_a_rebuild_matches_the_live_view(ctx: Context) -> None:
    from controlroom.projections.views import Views

    service = PlanService(ctx)
    plan = create(ctx)
    service.approve(plan.id)
    service.start(plan.id)
    views = Views.for_store(ctx.store)
    followers = Followers(ctx.store, views)
    plan = asyncio.run(drive(ctx, plan.id, followers))
    followers.catch_up()
    view = views.plans.plan(plan.id)
    assert [(t.task_id, t.state) for t in view.tasks] == [
        (t, s.value) for t, s in plan.states().items()
    ]
    assert view.tasks[0].run_status == "done" and view.tasks[0].review is not None
    assert view.tasks[2].choices == [] and view.tasks[2].scoping_question
    assert [p.plan_id for p in views.plans.plans()] == [plan.id]
    live = views.dump()
    views.rebuild()
    assert views.dump() == live


def test_analytics_plans_and_tasks_agree_with_the_plan(ctx: Context) -> None:
    from controlroom.projections.analytics import AnalyticsProjection

    service = PlanService(ctx)
    plan = create(ctx)
    service.approve(plan.id)
    service.start(plan.id)
    plan = asyncio.run(drive(ctx, plan.id, Followers(ctx.store)))
    with AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root) as analytics:
        analytics.catch_up()
        tasks = analytics.query("SELECT task_id, state FROM plan_tasks ORDER BY task_id").rows
        plans = analytics.query("SELECT plan_id, status, tasks, done FROM plans").rows
    assert tasks == [[t, s.value] for t, s in plan.states().items()]
    assert plans == [[plan.id, "running", 3, 2]]


def test_the_chief_sees_the_files_as_they_are_now_in_a_long_lived_context(
    ctx: Context, workspace: Path
) -> None:
    """A server's context lives for days: the scenes the Chief plans from are read anew."""
    before = workspace_scenes(ctx)
    assert 4 not in before.drafted
    scene = workspace / "Story" / "Scenes" / "SCN-04-the-reckoning.md"
    scene.write_text("# Scene 4: The Reckoning\n\nKael rang the bell.\n", encoding="utf-8")
    outline = workspace / "Story" / "SCN-outline.md"
    outline.write_text(
        outline.read_text(encoding="utf-8") + "\n## Scene 5: The Thaw\n\nSpring comes.\n",
        encoding="utf-8",
    )
    after = workspace_scenes(ctx)
    assert "The Reckoning" in after.drafted[4]
    assert 5 in after.outlined


def test_the_chiefs_follow_up_opens_an_issue_with_its_notes(ctx: Context) -> None:
    """A verdict that asks for work is acted on: the writer finds it as an issue."""
    service = PlanService(ctx)
    plan = create(ctx, "Check consistency of scenes 1-3 against canon")
    service.approve(plan.id)
    service.start(plan.id)
    plan = asyncio.run(drive(ctx, plan.id, Followers(ctx.store)))
    (review,) = [e for e in ctx.store.stream(plan.id) if isinstance(e, TaskReviewed)]
    assert review.decision == "follow_up"  # the planted error in scene 2 fails the DoD
    Followers(ctx.store).catch_up()
    opened = [
        p.event
        for p in ctx.store.read_log()
        if isinstance(p.event, IssueOpened) and p.event.kind == "follow_up"
    ]
    assert len(opened) == 1
    (issue,) = opened
    assert issue.check == {"plan_id": plan.id, "task_id": review.task_id}
    assert review.notes in issue.detail
    assert issue.run_id == plan.run_ids[review.task_id]


def test_a_task_whose_run_needs_refinement_is_run_once_more_by_the_plan(ctx: Context) -> None:
    """The plan is seed 004's campaign layer: a task run ending NEEDS_REFINEMENT (10) is
    run once more, as a run of its own, and the plan goes on when that one succeeds."""
    service = PlanService(ctx)
    plan = create(ctx, "Validate scene 3 against the outline, then check consistency of scene 3")
    service.approve(plan.id)
    service.start(plan.id)
    followers = Followers(ctx.store)
    followers.catch_up()
    first_id = service.load(plan.id).run_ids[1]
    first = ctx.store.load(Run, first_id)
    assert first is not None
    first.fail_step(ctx.clock.now(), "NeedsRefinementError", "no improvement", outcome=10)
    ctx.store.save(first)
    plan = asyncio.run(drive(ctx, plan.id, followers))
    assert plan.status == PlanStatus.DONE, plan.states()
    requested = [e.run_id for e in ctx.store.stream(plan.id) if isinstance(e, TaskRunRequested)]
    assert requested.count(first_id) == 1 and len(requested) == 3  # task 1 twice, task 2
    second = ctx.store.load(Run, plan.run_ids[1])
    assert second is not None and second.id != first_id and second.status == "done"
