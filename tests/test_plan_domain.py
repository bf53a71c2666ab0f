"""The SessionPlan aggregate: derived task states, user controls and their refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controlroom.domain.plan import SessionPlan, TaskState, find_cycle, plan_run_id
from controlroom.domain.plan_errors import PlanInputError, PlanStateError
from controlroom.domain.plan_events import PlanTask, TaskForceStarted, TaskRunRequested

AT = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def seed_example() -> list[PlanTask]:
    """The seed's plan: two scenes, a check needing both, an audit needing scoping."""
    return [
        PlanTask(task_id=1, description="Write Scene 21", recipe_id="creative_draft_scene"),
        PlanTask(
            task_id=2, description="Write Scene 22", recipe_id="creative_draft_scene", deps=[1]
        ),
        PlanTask(
            task_id=3,
            description="Consistency check (scenes 21-22 vs canon)",
            recipe_id="analytical_consistency",
            deps=[1, 2],
        ),
        PlanTask(
            task_id=4,
            description="Foreshadowing audit",
            scoping_question="Which themes need foreshadowing? Which scenes?",
        ),
    ]


def new_plan(tasks: list[PlanTask] | None = None) -> SessionPlan:
    return SessionPlan.create(
        "plan_1", AT, intent="write 21 and 22", session_id="sess_1", tasks=tasks or seed_example()
    )


def requested(plan: SessionPlan) -> list[int]:
    return [e.task_id for e in plan.collect_events() if isinstance(e, TaskRunRequested)]


def test_the_seed_plan_starts_with_the_seeds_states() -> None:
    plan = new_plan()
    assert plan.states() == {
        1: TaskState.PENDING,
        2: TaskState.BLOCKED,
        3: TaskState.BLOCKED,
        4: TaskState.NEEDS_SCOPING,
    }


def test_tasks_run_in_dependency_order_and_the_plan_waits_for_the_scoping_answer() -> None:
    plan = new_plan()
    plan.approve(AT)
    plan.start(AT)
    assert requested(plan) == [1]
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "done")
    assert requested(plan) == [2]
    plan.record_run_outcome(AT, plan_run_id("plan_1", 2), "done")
    assert requested(plan) == [3]
    plan.record_run_outcome(AT, plan_run_id("plan_1", 3), "done")
    assert not plan.is_finished  # task 4 still needs the user's answer
    answered = PlanTask(task_id=4, description="Foreshadowing audit of the ledger", recipe_id="x")
    plan.answer(AT, 4, "the ledger", answered)
    assert requested(plan) == [4]
    plan.record_run_outcome(AT, plan_run_id("plan_1", 4), "done")
    assert plan.status == "done"


def test_a_failed_task_keeps_its_dependants_blocked_and_finishes_the_plan_failed() -> None:
    plan = new_plan(seed_example()[:3])
    plan.approve(AT)
    plan.start(AT)
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "failed")
    assert plan.states() == {1: TaskState.FAILED, 2: TaskState.BLOCKED, 3: TaskState.BLOCKED}
    assert plan.status == "failed"


def test_a_retried_run_that_succeeds_turns_a_failed_task_done_and_unblocks_the_rest() -> None:
    plan = new_plan(seed_example()[:2])
    plan.approve(AT)
    plan.start(AT)
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "failed")
    assert plan.status == "failed"
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "done")
    assert plan.task_state(2) == TaskState.RUNNING


def test_pause_stops_new_starts_and_resume_starts_what_became_ready() -> None:
    plan = new_plan(seed_example()[:2])
    plan.approve(AT)
    plan.start(AT)
    plan.pause(AT, "lunch")
    plan.collect_events()
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "done")
    assert requested(plan) == []
    plan.resume(AT)
    assert requested(plan) == [2]


def test_force_start_runs_a_blocked_task_and_records_the_deps_it_skipped() -> None:
    plan = new_plan()
    plan.approve(AT)
    plan.start(AT)
    plan.collect_events()
    plan.force_start(AT, 3)
    events = plan.collect_events()
    forced = [e for e in events if isinstance(e, TaskForceStarted)]
    assert forced[0].unfinished_deps == [1, 2]
    assert plan.task_state(3) == TaskState.RUNNING


def test_controls_out_of_turn_are_refused_with_reasons() -> None:
    plan = new_plan()
    with pytest.raises(PlanStateError, match="approve it first"):
        plan.start(AT)
    with pytest.raises(PlanStateError):
        plan.pause(AT)
    with pytest.raises(PlanInputError, match="no scoping question"):
        plan.answer(AT, 1, "x", seed_example()[0])
    with pytest.raises(PlanInputError, match="no task 9"):
        plan.remove(AT, 9)
    plan.approve(AT)
    with pytest.raises(PlanStateError):
        plan.force_start(AT, 2)  # not running yet


def test_reorder_must_keep_every_task_after_what_it_needs() -> None:
    plan = new_plan()
    with pytest.raises(PlanInputError, match="cannot come before"):
        plan.reorder(AT, [2, 1, 3, 4])
    with pytest.raises(PlanInputError, match="exactly once"):
        plan.reorder(AT, [1, 2, 3])
    plan.reorder(AT, [4, 1, 2, 3])
    assert plan.order == [4, 1, 2, 3]


def test_removing_a_needed_task_is_refused_unless_cascading() -> None:
    plan = new_plan()
    with pytest.raises(PlanInputError, match="tasks 2, 3 depend on task 1"):
        plan.remove(AT, 1)
    assert plan.remove(AT, 1, cascade=True) == [1, 2, 3]
    assert plan.order == [4]


def test_plans_with_cycles_self_deps_or_unknown_deps_are_refused() -> None:
    a = PlanTask(task_id=1, description="a", recipe_id="r", deps=[2])
    b = PlanTask(task_id=2, description="b", recipe_id="r", deps=[1])
    with pytest.raises(PlanInputError, match="cycle"):
        new_plan([a, b])
    with pytest.raises(PlanInputError, match="depends on itself"):
        new_plan([PlanTask(task_id=1, description="a", recipe_id="r", deps=[1])])
    with pytest.raises(PlanInputError, match="not in the plan"):
        new_plan([PlanTask(task_id=1, description="a", recipe_id="r", deps=[7])])
    plan = new_plan()
    with pytest.raises(PlanInputError, match="cycle"):
        plan.edit(AT, PlanTask(task_id=1, description="a", recipe_id="r", deps=[3]))
    assert find_cycle({1: [2], 2: [3], 3: [1]}) == [1, 2, 3, 1]


def test_an_edit_after_the_task_started_is_refused() -> None:
    plan = new_plan()
    plan.approve(AT)
    plan.start(AT)
    with pytest.raises(PlanStateError, match="has started"):
        plan.edit(AT, PlanTask(task_id=1, description="other", recipe_id="r"))


def test_run_ids_are_the_same_in_every_process() -> None:
    assert plan_run_id("plan_1", 1) == plan_run_id("plan_1", 1) != plan_run_id("plan_1", 2)


def test_a_task_added_to_a_running_plan_runs_after_what_it_waits_for() -> None:
    plan = new_plan(seed_example()[:1])
    plan.approve(AT)
    plan.start(AT)
    assert requested(plan) == [1]
    added = PlanTask(task_id=2, description="Style tune-up", recipe_id="loop_x", deps=[1])
    plan.add(AT, added)
    assert plan.order == [1, 2] and plan.states()[2] == TaskState.BLOCKED
    plan.record_run_outcome(AT, plan_run_id("plan_1", 1), "done")
    assert requested(plan) == [2]  # the new task started once its dependency was done
    with pytest.raises(PlanInputError, match="has a task 2"):
        plan.add(AT, added)
    with pytest.raises(PlanInputError):
        plan.add(AT, PlanTask(task_id=3, description="x", recipe_id="r", deps=[9]))
    plan.record_run_outcome(AT, plan_run_id("plan_1", 2), "done")
    with pytest.raises(PlanStateError):  # a finished plan takes no new task
        plan.add(AT, PlanTask(task_id=3, description="x", recipe_id="r"))


def test_the_plan_as_campaign_layer_runs_a_task_needing_refinement_once_more() -> None:
    """Seed 004's table for the campaign layer: NEEDS_REFINEMENT (10) runs the task once
    more (a run of its own); a second 10 is re-raised; PARTIAL_SUCCESS (12) is absorbed."""
    plan = new_plan(seed_example()[:2])
    plan.approve(AT)
    plan.start(AT)
    first = plan_run_id("plan_1", 1)
    assert plan.record_run_outcome(AT, first, "failed", "no improvement", code=10)
    second = plan_run_id("plan_1", 1, attempt=2)
    assert second != first and plan.run_ids[1] == second
    assert plan.task_state(1) == TaskState.RUNNING and plan.attempts[1] == 2
    assert not plan.record_run_outcome(AT, first, "failed", "late duplicate", code=10)
    plan.record_run_outcome(AT, second, "failed", "still no improvement", code=10)
    assert plan.task_state(1) == TaskState.FAILED
    finished = [e for e in plan.collect_events() if type(e).__name__ == "TaskFinished"]
    assert (finished[-1].code, finished[-1].reaction) == (10, "reraise")

    partial = new_plan(seed_example()[:2])
    partial.approve(AT)
    partial.start(AT)
    partial.record_run_outcome(AT, plan_run_id("plan_1", 1), "done", "partial", code=12)
    assert partial.task_state(1) == TaskState.DONE and requested(partial)[-1] == 2
