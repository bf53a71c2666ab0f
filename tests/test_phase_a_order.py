"""Phase A of the runs one process executes: a few at a time, earliest run first, and a
long step never holds the others back."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controlroom.domain.run import RunStatus
from controlroom.engine import phase_a_order
from controlroom.engine.context import Context
from controlroom.engine.executor import Executor
from controlroom.engine.phase_a_order import PhaseAOrder
from controlroom.engine.service import RunRequest
from controlroom.engine.settings import Settings
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override


async def entered_in_order(order: PhaseAOrder, ranks: list[int]) -> list[int]:
    """Each rank waits for a place, holds it briefly, leaves; the order they got in."""
    entered: list[int] = []

    async def one(rank: int) -> None:
        await order.enter(rank)
        entered.append(rank)
        await asyncio.sleep(0)
        order.leave()

    await order.enter(-1)  # everyone queues behind a holder
    waiting = [asyncio.create_task(one(rank)) for rank in ranks]
    await asyncio.sleep(0)
    order.leave()
    await asyncio.gather(*waiting)
    return entered


def test_a_freed_place_goes_to_the_earliest_waiting_run() -> None:
    assert asyncio.run(entered_in_order(PhaseAOrder(1), [5, 2, 9, 0, 3])) == [0, 2, 3, 5, 9]


def test_places_up_to_the_limit_are_taken_at_once_and_the_next_waits() -> None:
    async def scenario() -> None:
        order = PhaseAOrder(2)
        await order.enter(0)
        await order.enter(1)
        third = asyncio.create_task(order.enter(2))
        await asyncio.sleep(0.01)
        assert not third.done()
        order.leave()
        await asyncio.wait_for(third, 1)

    asyncio.run(scenario())


def test_a_waiter_cancelled_keeps_no_place() -> None:
    async def scenario() -> None:
        order = PhaseAOrder(1)
        await order.enter(0)
        cancelled = asyncio.create_task(order.enter(1))
        later = asyncio.create_task(order.enter(2))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        order.leave()
        await asyncio.wait_for(later, 1)  # the place skipped the cancelled waiter
        order.leave()
        await asyncio.wait_for(order.enter(3), 1)  # and none was lost

    asyncio.run(scenario())


def test_at_least_one_place() -> None:
    with pytest.raises(ValueError, match="at least one"):
        PhaseAOrder(0)


class TickArgs(ToolArgs):
    pass


class Tick:
    name: ClassVar[str] = "tick"
    description: ClassVar[str] = "returns at once"
    args_model: ClassVar[type[ToolArgs]] = TickArgs

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        return ToolResult(output={"ok": True}, summary="tick")


class Hold:
    """Blocks its thread until released (or 20 s pass): a tool crunching a manuscript."""

    name: ClassVar[str] = "hold"
    description: ClassVar[str] = "blocks until released"
    args_model: ClassVar[type[ToolArgs]] = TickArgs
    #: It blocks: in a worker thread, as a tool crunching a manuscript would be.
    slow: ClassVar[bool] = True
    release = threading.Event()

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        Hold.release.wait(timeout=20)
        return ToolResult(output={"ok": True}, summary="held")


def recipe(recipe_id: str, tools: list[str]) -> str:
    steps = [
        {"step_id": f"s{i}", "tool": tool, "output_slot": f"o{i}"} for i, tool in enumerate(tools)
    ]
    return json.dumps({"recipe_id": recipe_id, "phase_a": steps})


def open_ctx(workspace: Path, at_once: int) -> Context:
    write_override(workspace, "ticks.json", recipe("ticks", ["tick"] * 3))
    write_override(workspace, "held.json", recipe("held", ["hold", "tick"]))
    settings = Settings.from_env({"CONTROLROOM_PHASE_A_AT_ONCE": str(at_once)})
    tools = ToolRegistry.default(with_plugins=False).with_tools(Tick(), Hold())
    return Context.open(workspace, settings=settings, tools=tools)


def steps_completed_in_log_order(ctx: Context) -> list[str]:
    """The run of each completed step, in the order the log holds them (every step of
    these recipes is in phase A)."""
    notes = ctx.store.recorder.select_notifications(0, 10**6)
    return [str(note.originator_id) for note in notes if note.topic.startswith("StepCompleted")]


def test_runs_started_together_go_through_phase_a_one_after_another(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However slow this machine, no step here counts as long (which would let go early).
    monkeypatch.setattr(phase_a_order, "LONG_PHASE_A_STEP_S", 30.0)
    ctx = open_ctx(workspace, at_once=1)

    async def scenario() -> list[str]:
        executor = Executor(ctx)
        await executor.start([])
        runs = await asyncio.gather(*(executor.submit(RunRequest("ticks", {})) for _ in range(5)))
        while executor.tasks:
            await asyncio.gather(*executor.tasks.values())
        await executor.stop()
        for run in runs:
            assert executor.service.load(run.id).status == RunStatus.DONE
        return [run.id for run in runs]

    ids = asyncio.run(scenario())
    order = steps_completed_in_log_order(ctx)
    ctx.close()
    # Run after run, each one's three steps together, in the order they were taken on
    # (all at once in lockstep, they would interleave: s0 of each, then s1 of each...).
    assert order == [run_id for run_id in ids for _ in range(3)]


def test_a_long_phase_a_step_lets_the_next_run_through(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(phase_a_order, "LONG_PHASE_A_STEP_S", 0.05)
    ctx = open_ctx(workspace, at_once=1)
    Hold.release.clear()

    async def scenario() -> None:
        executor = Executor(ctx)
        await executor.start([])
        held = await executor.submit(RunRequest("held", {}))
        held_task = executor.tasks[held.id]
        quick = await executor.submit(RunRequest("ticks", {}))
        # The quick run finishes while the first run's tool still holds its thread.
        await asyncio.wait_for(executor.tasks[quick.id], 10)
        assert executor.service.load(quick.id).status == RunStatus.DONE
        assert executor.service.load(held.id).status == RunStatus.RUNNING
        Hold.release.set()
        await asyncio.wait_for(held_task, 10)
        assert executor.service.load(held.id).status == RunStatus.DONE
        await executor.stop()

    try:
        asyncio.run(scenario())
    finally:
        Hold.release.set()
        ctx.close()
