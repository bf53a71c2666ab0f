"""The executor: claims runs and performs their steps, many at once, with no HTTP in sight.

`serve` and workers use it. Tools run in worker threads and commits go through the store's
group committer (`offload`), so the event loop that carries live feeds is never blocked by
a commit or a slow tool. A run whose waiting step is delivered by a policy (in this process
or another) is picked up again when that delivery is seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence

from eventsourcing.persistence import Tracking

from controlroom.domain.errors import ClaimLostError, ControlRoomError, RunClaimedError
from controlroom.domain.run import Run
from controlroom.domain.run_events import RunStarted, StepCompleted
from controlroom.engine.context import Context
from controlroom.engine.hooks import PartialHook
from controlroom.engine.phase_a_order import PhaseAOrder, PhaseATurn
from controlroom.engine.ports import process_owner
from controlroom.engine.runner import StepRunner
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned

log = logging.getLogger("controlroom.executor")


class Executor:
    def __init__(
        self,
        ctx: Context,
        *,
        max_concurrent: int = 64,
        on_partial: PartialHook | None = None,
        offload: bool = True,
        start_new_runs: bool = False,
    ) -> None:
        self.ctx = ctx
        self.service = RunService(ctx)
        self.on_partial = on_partial
        self.offload = offload
        #: Also begin runs a policy starts (a plan's tasks): the server does; a worker claims
        #: them by polling, like any queued run.
        self.start_new_runs = start_new_runs
        self.owner = process_owner()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        #: Runs spawned here that another process claimed first (nothing done here).
        self.claims_lost = 0
        self._slots = asyncio.Semaphore(max(1, max_concurrent))
        self.phase_a = PhaseAOrder(ctx.settings.phase_a_at_once)
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, unfinished: Iterable[str]) -> None:
        """Begin: resume the given unfinished runs, and watch for delivered waits."""
        self._loop = asyncio.get_running_loop()
        self.ctx.store.observe(self._on_commit)
        for run_id in unfinished:
            self.spawn(run_id)

    async def stop(self) -> None:
        """Stop executing; unfinished runs stay resumable from their events."""
        self.ctx.store.unobserve(self._on_commit)
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def submit(self, request: RunRequest) -> Run:
        """Record the start of a run (claimed by this process) and begin executing it."""
        if not self.offload:
            run = await asyncio.to_thread(self.service.start, request, self.owner)
        else:
            # Runs submitted together (concurrent requests) commit their starts together.
            # `begin` reads and writes nothing (the recipe catalog is in memory) and takes
            # well under a millisecond: on the loop, not through a thread whose hand-back
            # waits behind the runs already executing (5 ms a submission with 50 of them).
            run = self.service.begin(request, self.owner)
            await StepRunner(self.ctx, offload=True).commit(run)
        self.spawn(run.id, run)
        return run

    async def cancel(self, run_id: str) -> Run:
        run = await asyncio.to_thread(self.service.cancel, run_id)
        task = self.tasks.get(run_id)
        if task is not None:
            task.cancel()  # stops an in-flight model call; the cancellation is recorded
        return run

    def spawn(self, run_id: str, run: Run | None = None) -> None:
        if run_id in self.tasks:
            return

        # Ranked as taken on: the earliest runs go through phase A first.
        turn = PhaseATurn(self.phase_a, self.phase_a.next_rank())

        async def execute() -> None:
            async with self._slots:
                try:
                    if run is None:
                        await self.service.resume(
                            run_id,
                            self.on_partial,
                            owner=self.owner,
                            offload=self.offload,
                            phase_a=turn,
                        )
                    else:
                        await self.service.execute(
                            run, self.on_partial, offload=self.offload, phase_a=turn
                        )
                except (ClaimLostError, RunClaimedError):  # another worker won the race
                    self.claims_lost += 1
                    log.info("run %s: another process claimed it first", run_id)
                except ControlRoomError as exc:
                    log.warning("run %s stopped: %s", run_id, exc)
                finally:
                    self.tasks.pop(run_id, None)

        self.tasks[run_id] = asyncio.create_task(execute(), name=run_id)

    def _on_commit(
        self, *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
    ) -> None:
        # A policy completed a waiting step: the run can go on. Commits may come from any
        # thread, so hop onto the loop.
        if tracking is None or self._loop is None:
            return
        # Or a policy started a run (a plan's task): it is queued for whoever executes.
        delivered = {
            item.event.originator_id
            for item in committed
            if isinstance(item.event, StepCompleted)
            or (self.start_new_runs and isinstance(item.event, RunStarted))
        }
        for run_id in delivered:
            self._loop.call_soon_threadsafe(self.spawn, run_id)
