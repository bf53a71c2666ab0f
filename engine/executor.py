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

from controlroom.domain.errors import (
    ClaimLostError,
    ControlRoomError,
    RunClaimedError,
    StoreUnavailableError,
)
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

#: A run stopped by a store fault (disk full, locked, unreachable) is taken up again here
#: this many times, waiting 1, 2, 4 … seconds (at most `STORE_RETRY_MAX_DELAY_S`) between
#: tries: about a quarter of an hour in all. Each try is logged (the store cannot record
#: it); after the last, `controlroom resume` or a restart takes the run up.
STORE_RETRY_LIMIT = 20
STORE_RETRY_MAX_DELAY_S = 60.0


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
        #: Runs stopped by a store fault: how many times each was taken up again so far.
        self.store_retries: dict[str, int] = {}
        self._retry_timers: dict[str, asyncio.TimerHandle] = {}

    async def start(self, unfinished: Iterable[str]) -> None:
        """Begin: resume the given unfinished runs, and watch for delivered waits."""
        self._loop = asyncio.get_running_loop()
        self.ctx.store.observe(self._on_commit)
        for run_id in unfinished:
            self.spawn(run_id)

    async def stop(self) -> None:
        """Stop executing; unfinished runs stay resumable from their events."""
        self.ctx.store.unobserve(self._on_commit)
        for timer in self._retry_timers.values():
            timer.cancel()
        self._retry_timers.clear()
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
            # Only the first task to route trains the router's classifier, in a thread.
            if not self.service.routing_ready(request):
                await asyncio.to_thread(self.service.prepare_routing)
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
                    self.store_retries.pop(run_id, None)
                except (ClaimLostError, RunClaimedError):  # another worker won the race
                    self.claims_lost += 1
                    log.info("run %s: another process claimed it first", run_id)
                except StoreUnavailableError as exc:
                    self._take_up_later(run_id, exc)
                except ControlRoomError as exc:
                    log.warning("run %s stopped: %s", run_id, exc)
                finally:
                    self.tasks.pop(run_id, None)

        self.tasks[run_id] = asyncio.create_task(execute(), name=run_id)

    def _take_up_later(self, run_id: str, fault: StoreUnavailableError) -> None:
        """A store fault stopped the run with nothing recorded: it is resumable, so take it
        up again once the store may be back, a bounded number of times."""
        tries = self.store_retries.get(run_id, 0) + 1
        if tries > STORE_RETRY_LIMIT or self._loop is None:
            log.error(
                "run %s stopped on a store fault %d times; not taken up again here "
                "(`controlroom resume %s` once the store is fixed): %s",
                run_id,
                tries - 1,
                run_id,
                fault,
            )
            return
        self.store_retries[run_id] = tries
        delay = min(STORE_RETRY_MAX_DELAY_S, 2.0 ** (tries - 1))
        log.warning(
            "run %s stopped on a store fault (%s); taken up again in %.0f s (try %d of %d)",
            run_id,
            fault,
            delay,
            tries,
            STORE_RETRY_LIMIT,
        )

        def again() -> None:
            self._retry_timers.pop(run_id, None)
            self.spawn(run_id)

        self._retry_timers[run_id] = self._loop.call_later(delay, again)

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
