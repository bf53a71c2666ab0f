"""Runs a plan in the foreground (`controlroom plan start|resume`): the policies start each
ready task's run, this process executes those runs concurrently (claiming them, so a worker
elsewhere never advances one at the same time) and the Chief's review run of each finished
task (started when due, `engine/reviews.py`), and
it returns when the plan has finished, is paused, or waits on the user (a scoping answer),
and no failed review is waiting to be asked again (the plan bounds those: a few attempts,
then given up). A review never holds up the next task.

Nothing here decides what runs next: that is the plan (domain) and its policies. So a
SIGKILL at any moment loses nothing: the next `plan resume`, `serve` or `worker` picks up
the requested runs from the log, each started once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from controlroom.domain.plan import PlanStatus, SessionPlan, TaskState
from controlroom.domain.run import Run
from controlroom.engine.context import Context
from controlroom.engine.executor import Executor
from controlroom.engine.followers import Followers
from controlroom.engine.hooks import PartialHook
from controlroom.engine.plans import PlanService
from controlroom.engine.ports import owner_is_gone
from controlroom.engine.reviews import start_due_reviews

#: How often to look again while a run of the plan is executing in another process.
POLL_S = 0.5
Report = Callable[[SessionPlan], None]


class PlanDrive:
    """One pass of what moves plans along in a process, the same for `plan start` here and
    for `serve`: the followers catch up (policies start ready tasks' runs and record
    reviews), the Chief's due reviews start as runs (`engine/reviews.py`), and the plans'
    runs this process may execute are handed to its executor (none under `--no-execute`:
    workers take them)."""

    def __init__(
        self,
        ctx: Context,
        executor: Executor | None,
        catch_up: Callable[[], object],
    ) -> None:
        self.ctx = ctx
        self.executor = executor
        self.catch_up = catch_up
        self.service = PlanService(ctx)

    async def step(self, plans: Callable[[], Iterable[str]]) -> list[str]:
        """A pass over the plans `plans()` names once the followers caught up; returns
        their runs in flight (tasks and reviews)."""
        await asyncio.to_thread(self.catch_up)
        ids = list(await asyncio.to_thread(plans))
        if not ids:
            return []
        owner = self.executor.owner if self.executor is not None else None
        reviewing = await asyncio.to_thread(start_due_reviews, self.ctx, ids, owner)
        running: list[str] = []
        for plan_id in ids:
            plan = await asyncio.to_thread(self.service.load, plan_id)
            running += self.service.runs_to_execute(plan)
        running += reviewing
        if self.executor is not None:
            for run_id in await asyncio.to_thread(_ours_to_run, self.ctx, self.executor, running):
                self.executor.spawn(run_id)
        return running


async def drive(
    ctx: Context,
    plan_id: str,
    followers: Followers,
    *,
    on_change: Report | None = None,
    on_partial: PartialHook | None = None,
) -> SessionPlan:
    service = PlanService(ctx)
    executor = Executor(ctx, max_concurrent=ctx.settings.max_concurrent_runs, on_partial=on_partial)
    await executor.start([])
    passes = PlanDrive(ctx, executor, followers.catch_up)
    last: tuple[int, int] | None = None
    try:
        while True:
            running = await passes.step(lambda: [plan_id])
            plan = await asyncio.to_thread(service.load, plan_id)
            if on_change is not None and (plan.version, len(executor.tasks)) != last:
                on_change(plan)
            last = (plan.version, len(executor.tasks))
            retry_at = plan.next_review_retry()
            if _settled(plan, running) and not plan.unreviewed():
                return plan
            # Look again when a run ends, or when a failed review is due to be asked again.
            wait_s = None
            if retry_at is not None:
                wait_s = max(0.0, (retry_at - ctx.clock.now()).total_seconds())
            busy = list(executor.tasks.values())
            if busy:
                await asyncio.wait(busy, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            else:
                # Executing elsewhere (a worker), or only a review to wait for: look again.
                await asyncio.sleep(POLL_S if wait_s is None else min(POLL_S, wait_s))
    finally:
        await executor.stop()


def _settled(plan: SessionPlan, running: list[str]) -> bool:
    """Nothing more happens here without the user: the plan finished or is paused, or
    nothing runs and nothing can start (a scoping answer is awaited)."""
    if plan.is_finished or (not running and plan.status != PlanStatus.RUNNING):
        return True
    if running:
        return False
    waiting = {TaskState.NEEDS_SCOPING, TaskState.BLOCKED, TaskState.DONE, TaskState.FAILED}
    return all(state in waiting for state in plan.states().values())


def _ours_to_run(ctx: Context, executor: Executor, run_ids: list[str]) -> list[str]:
    """The runs this process may execute: not already executing here, and not held by a
    live claim of another process (a worker executing it)."""
    now = ctx.clock.now()
    mine = []
    for run_id in run_ids:
        if run_id in executor.tasks:
            continue
        run = ctx.store.load(Run, run_id)
        if run is None or run.is_finished or run.is_waiting:
            continue
        held_elsewhere = run.owner and run.owner != executor.owner and run.lease_is_live(now)
        if held_elsewhere and not owner_is_gone(run.owner):
            continue
        mine.append(run_id)
    return mine
