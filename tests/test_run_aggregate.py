"""The Run aggregate decides; its events say what happened, in a hash chain."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controlroom.domain.errors import RunStateError
from controlroom.domain.events import GENESIS_HASH
from controlroom.domain.recipe import Recipe
from controlroom.domain.run import AgentOutcome, Run, RunStatus, ToolOutcome
from controlroom.domain.run_events import RunStarted, StepStarted, TaskSpec, TokenUsage

AT = datetime(2026, 1, 1, tzinfo=UTC)
RECIPE = Recipe.model_validate(
    {
        "recipe_id": "r",
        "phase_a": [{"step_id": "find", "tool": "file_locator", "output_slot": "found"}],
        "phase_b": [
            {
                "step_id": "write",
                "agent_archetype": "writer",
                "input_slots": ["found"],
                "output_slot": "draft",
                "prompt_type": "draft_scene",
            }
        ],
        "dod": [{"check": "slot_not_null", "slot": "draft"}],
    }
)
TOOL = ToolOutcome("rcpt_1", {}, [], {"paths": ["a.md"]}, "abc", "1 file", 1.0)
AGENT = AgentOutcome(
    "writer-001",
    "t3",
    "offline",
    "m",
    "t3",
    "sha256:p",
    ["found"],
    '{"pass": true}',
    "def",
    "preview",
    TokenUsage(),
    2.0,
)


def started() -> Run:
    return Run.start("run_1", AT, RECIPE, TaskSpec(description="d"), None, "sess_1", "tr_1")


def test_starting_records_the_recipe_and_the_first_step_together() -> None:
    run = started()
    events = run.collect_events()
    assert [type(e) for e in events] == [RunStarted, StepStarted]
    first = events[0]
    assert isinstance(first, RunStarted)
    assert first.fingerprint == RECIPE.fingerprint() and first.recipe == RECIPE.snapshot()
    assert run.status == RunStatus.RUNNING and run.phase == "a"


def test_steps_run_in_order_and_slots_hold_their_values() -> None:
    run = started()
    run.complete_tool_step(AT, TOOL)
    assert run.slot_values["found"] == {"paths": ["a.md"]}
    assert run.slot_texts["found"] == "1 file"
    assert run.phase == "b"
    run.complete_agent_step(AT, AGENT)
    assert run.slot_values["draft"] == {"pass": True}
    assert run.next_step() is None


def test_a_step_cannot_be_completed_twice_or_out_of_kind() -> None:
    run = started()
    with pytest.raises(RunStateError):
        run.complete_agent_step(AT, AGENT)
    run.complete_tool_step(AT, TOOL)
    with pytest.raises(RunStateError):
        run.complete_tool_step(AT, TOOL)


def test_every_event_links_to_its_predecessor_by_hash() -> None:
    run = started()
    run.complete_tool_step(AT, TOOL)
    events = run.collect_events()
    assert events[0].prev_hash == GENESIS_HASH
    for before, after in zip(events, events[1:], strict=False):
        assert after.prev_hash == before.event_hash
    for event in events:
        assert event.event_hash == event.content_hash()


def test_rebuilding_from_events_gives_the_same_state() -> None:
    run = started()
    run.complete_tool_step(AT, TOOL)
    rebuilt = Run.project(None, run.collect_events())
    assert rebuilt is not None
    assert (rebuilt.version, rebuilt.slot_values, rebuilt.last_hash) == (
        run.version,
        run.slot_values,
        run.last_hash,
    )


def test_a_finished_run_refuses_cancel_and_resume() -> None:
    run = started()
    run.cancel(AT, "no longer needed")
    assert run.status == RunStatus.CANCELLED
    with pytest.raises(RunStateError):
        run.cancel(AT, "again")
    with pytest.raises(RunStateError):
        run.resume(AT)


def test_a_failed_step_fails_the_run_without_retry() -> None:
    run = started()
    run.fail_step(AT, "ToolError", "boom")
    assert run.status == RunStatus.FAILED and "boom" in (run.error or "")
    with pytest.raises(RunStateError):
        run.next_step()


def test_steps_record_their_instance_id_and_kind() -> None:
    run = started()
    run.complete_tool_step(AT, TOOL)
    starts = [e for e in run.collect_events() if isinstance(e, StepStarted)]
    assert [(s.instance_id, s.kind, s.phase) for s in starts] == [
        ("find", "tool", "a"),
        ("write", "agent", "b"),
    ]


def test_a_waiting_step_holds_the_run_until_its_delivery_and_delivery_is_idempotent() -> None:
    from controlroom.domain.run import Waiting
    from controlroom.domain.run_events import StepCompleted, StepWaiting

    run = started()
    run.wait(AT, Waiting("a person must look", {"ask": "find"}))
    assert run.is_waiting and run.next_step() is None and not run.steps_done
    assert [type(e) for e in run.collect_events()][-1] is StepWaiting
    with pytest.raises(RunStateError):
        run.complete_step(AT, TOOL)  # only the delivery completes a waiting step
    assert not run.deliver(AT, "write", TOOL)  # not the instance that waits
    assert run.deliver(AT, "find", TOOL)
    assert not run.deliver(AT, "find", TOOL)  # delivered already: nothing recorded
    completed = [e for e in run.collect_events() if isinstance(e, StepCompleted)]
    assert [c.instance_id for c in completed] == ["find"]
    current = run.next_step()
    assert current is not None and current.instance_id == "write"


def test_a_claim_holds_until_its_lease_expires_unless_its_owner_is_gone() -> None:
    from datetime import timedelta

    from controlroom.domain.errors import RunClaimedError
    from controlroom.domain.run_events import RunClaimed

    run = started()
    run.claim(AT, "host:1", lease_s=30)
    run.claim(AT, "host:1", lease_s=30)  # the same claim again records nothing
    with pytest.raises(RunClaimedError, match="host:1"):
        run.claim(AT + timedelta(seconds=10), "host:2", lease_s=30)
    assert not run.claimable(AT + timedelta(seconds=10))
    assert run.claimable(AT + timedelta(seconds=31))
    run.claim(AT + timedelta(seconds=10), "host:2", lease_s=30, takeover=True)
    claims = [e for e in run.collect_events() if isinstance(e, RunClaimed)]
    assert [c.owner for c in claims] == ["host:1", "host:2"] and run.owner == "host:2"


def test_a_lease_is_renewed_only_once_half_of_it_has_run_out() -> None:
    from datetime import timedelta

    from controlroom.domain.run_events import RunClaimed

    run = started()
    run.claim(AT, "w", lease_s=30)
    run.collect_events()
    run.renew_lease(AT + timedelta(seconds=10), "w", 30)
    assert run.collect_events() == []
    run.renew_lease(AT + timedelta(seconds=20), "w", 30)
    (renewal,) = run.collect_events()
    assert isinstance(renewal, RunClaimed)
    assert renewal.lease_expires_at == AT + timedelta(seconds=50)
    run.release(AT, "someone else")
    assert run.collect_events() == [] and run.owner == "w"
    run.release(AT, "w")
    assert run.owner == "" and run.claimable(AT)


def test_events_of_release_0_1_without_instance_ids_still_rebuild_the_run() -> None:
    run = started()
    run.complete_tool_step(AT, TOOL)
    old_shape = [
        e.model_copy(update={"instance_id": ""}) if isinstance(e, StepStarted) else e
        for e in run.collect_events()
    ]
    rebuilt = Run.project(None, old_shape)
    assert rebuilt is not None
    current = rebuilt.next_step()
    assert current is not None and current.instance_id == "write"
