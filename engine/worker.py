"""A worker: claims queued and abandoned runs through the runs' own events and executes
them, several at once, beside other workers on the same store.

Which runs are claimable is read from the runs projection (unfinished), then decided by
the run aggregate itself (`Run.claimable`: not waiting, nobody's lease live) or by the
owner's process: a claim by a process on this host that is gone is dead, whatever its
lease says (a killed worker, an interrupted `controlroom run`). The claim is an event, so
optimistic concurrency lets only one worker win a run. Policies run here too,
each event reacted to once across all workers (their tracking rows see to that).

On SIGTERM a worker stops claiming, lets the steps in flight finish for a grace period,
then cancels what is left and releases those runs so another worker takes them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from controlroom.domain.run import Run, RunStatus
from controlroom.engine.context import Context
from controlroom.engine.executor import Executor
from controlroom.engine.followers import Followers
from controlroom.engine.ports import owner_is_gone

log = logging.getLogger("controlroom.worker")


def _held_by_the_dead(run: Run) -> bool:
    """Unfinished, not waiting, and claimed by a process on this host that no longer runs
    (`RunService.resume` then takes it over)."""
    return (
        run.status == RunStatus.RUNNING
        and not run.is_waiting
        and bool(run.owner)
        and owner_is_gone(run.owner)
    )


class Worker:
    def __init__(
        self,
        ctx: Context,
        unfinished: Callable[[], Sequence[str]],
        followers: Followers,
        *,
        concurrency: int = 8,
        poll_s: float = 0.5,
        grace_s: float = 30.0,
    ) -> None:
        self.ctx = ctx
        self.unfinished = unfinished
        self.followers = followers
        self.concurrency = max(1, concurrency)
        self.poll_s = poll_s
        self.grace_s = grace_s
        self.executor = Executor(ctx, max_concurrent=self.concurrency, offload=True)
        #: Runs this worker went for (some may have been claimed by another worker first).
        self.claimed = 0
        #: Unfinished runs of other workspaces sharing the store: never this worker's.
        self._elsewhere: set[str] = set()

    @property
    def taken(self) -> int:
        """Runs this worker claimed and advanced."""
        return self.claimed - self.executor.claims_lost

    @property
    def owner(self) -> str:
        return self.executor.owner

    def claimable(self, limit: int | None = None) -> list[str]:
        """Unfinished runs that nobody holds a live claim on, oldest first, at most `limit`.

        Each candidate's aggregate is loaded to decide: with hundreds queued, loading them
        all every tick cost more than executing them, so the scan stops at `limit`."""
        now = self.ctx.clock.now()
        here = self.executor.service.workspace_key
        found: list[str] = []
        for run_id in self.unfinished():
            if limit is not None and len(found) >= limit:
                break
            if run_id in self.executor.tasks or run_id in self._elsewhere:
                continue
            run = self.ctx.store.load(Run, run_id)
            if run is not None and run.belongs_elsewhere(here):
                # another workspace's run, on a store they share: theirs to run; a run's
                # workspace never changes, so it is not loaded again every tick
                self._elsewhere.add(run_id)
                continue
            if run is None:
                continue
            if run.claimable(now) or _held_by_the_dead(run) or self._ours_to_go_on(run):
                found.append(run_id)
        return found

    def _ours_to_go_on(self, run: Run) -> bool:
        """Held by this worker's own claim but executing nowhere here: a step it waited on
        was delivered by another worker's policy (a child run ended there), so only this
        worker, whose lease is live, may go on with it."""
        return run.status == RunStatus.RUNNING and not run.is_waiting and run.owner == self.owner

    async def run(self, stop: asyncio.Event) -> None:
        await self.executor.start([])
        try:
            while not stop.is_set():
                await self._tick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_s)
        finally:
            await self.drain()

    async def _tick(self) -> None:
        try:
            await asyncio.to_thread(self.followers.catch_up)
            free = self.concurrency - len(self.executor.tasks)
            candidates = await asyncio.to_thread(self.claimable, free) if free > 0 else []
        except Exception:  # the store may be briefly unreachable: try again next tick
            log.exception("worker %s could not read the store", self.owner)
            return
        for run_id in candidates:
            if len(self.executor.tasks) >= self.concurrency:
                break
            self.claimed += 1
            self.executor.spawn(run_id)

    async def drain(self) -> None:
        """Let running steps finish for the grace period, then cancel and release."""
        tasks = dict(self.executor.tasks)
        if tasks:
            await asyncio.wait(list(tasks.values()), timeout=self.grace_s)
        unfinished = [run_id for run_id, task in tasks.items() if not task.done()]
        await self.executor.stop()
        for run_id in unfinished:
            await asyncio.to_thread(self.executor.service.release, run_id, self.owner)
            log.warning("worker %s released %s for another worker", self.owner, run_id)
        await asyncio.to_thread(self.followers.catch_up)
