"""The server's running state: the executor, the catch-up loop, the live hub, wake-ups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import Subscription, Tracking

from controlroom.api.hub import EventHub
from controlroom.api.notify import LogNotifier
from controlroom.domain.run import Run
from controlroom.engine.context import Context
from controlroom.engine.executor import Executor
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.views import Views

log = logging.getLogger("controlroom.server")
PROJECTION_INTERVAL_S = 0.2


class Server:
    def __init__(self, ctx: Context, *, execute: bool = True) -> None:
        self.ctx = ctx
        self.service = RunService(ctx)
        self.views = Views.for_store(ctx.store, ctx.workspace.root)
        self.followers = Followers(ctx.store, self.views)
        #: Followed by the loop below, not by `read_views`: GETs of runs never wait for it.
        self.analytics = AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root)
        self.notifier = LogNotifier()
        self.hub: EventHub
        self.executor: Executor
        self.max_concurrent_runs = ctx.settings.max_concurrent_runs
        #: False with `serve --no-execute`: runs are queued for workers, never run here.
        self.execute = execute
        self._follower_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscription: Subscription[Any] | None = None

    def _on_commit(
        self, *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
    ) -> None:
        # Commits happen in worker threads: wake the hub and the followers on the loop.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.notifier.notify)

    def read_views(self) -> Views:
        """Read-your-writes: catch the views up before answering a GET."""
        self.followers.catch_up()
        return self.views

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.ctx.store.observe(self._on_commit)
        # Its first look at the log reads the store: off the loop, like every store read.
        self.hub = await asyncio.to_thread(EventHub, self.ctx.store, self.notifier)
        self.hub.start()
        self.executor = Executor(
            self.ctx,
            max_concurrent=self.max_concurrent_runs,
            on_partial=self.hub.publish_partial,
            start_new_runs=True,
        )
        await asyncio.to_thread(self.followers.catch_up)
        unfinished = [row.run_id for row in self.views.query.runs(status="running")]
        if self.execute:
            await self.executor.start(unfinished)
        self._follower_task = asyncio.create_task(self._follow_forever())
        self._listen_to_other_processes()

    def _listen_to_other_processes(self) -> None:
        """On PostgreSQL, commits by other processes (workers, other servers) wake the live
        feeds at once through LISTEN/NOTIFY (the library's subscription); on SQLite the feeds
        poll the log instead (every half second while idle)."""
        recorder = self.ctx.store.recorder
        if "POSTGRES_DBNAME" not in self.ctx.store.env:
            return
        subscription = recorder.subscribe(gt=self.ctx.store.max_position())
        self._subscription = subscription
        loop = self._loop
        assert loop is not None

        def listen() -> None:
            with contextlib.suppress(Exception):  # ends when stopped (or the database goes)
                for _ in subscription:
                    loop.call_soon_threadsafe(self.notifier.notify)

        threading.Thread(target=listen, name="controlroom-listen", daemon=True).start()

    async def stop(self) -> None:
        """Stop executing; unfinished runs stay resumable from their events."""
        if self._subscription is not None:
            self._subscription.stop()
        self.ctx.store.unobserve(self._on_commit)
        await self.hub.stop()
        await self.executor.stop()
        if self._follower_task is not None:
            self._follower_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._follower_task
        self.views.close()
        self.analytics.close()

    async def start_run(self, request: RunRequest) -> Run:
        if not self.execute:
            return await asyncio.to_thread(self.service.start, request)  # queued
        return await self.executor.submit(request)

    async def cancel(self, run_id: str) -> Run:
        return await self.executor.cancel(run_id)

    async def _follow_forever(self) -> None:
        from controlroom.api.plans_http import review_finished_tasks

        while True:
            seen = self.notifier.generation
            try:
                # Off the loop: policies and projections write SQLite.
                await asyncio.to_thread(self.followers.catch_up)
                await review_finished_tasks(self)
                await asyncio.to_thread(self.analytics.catch_up, wait=False)
            except Exception:  # keep serving; the next pass retries from the tracked positions
                log.exception("catch-up failed")
            # Catch up in batches, not per commit: live feeds come first on this loop, and
            # every GET catches up for itself before it reads.
            await asyncio.sleep(PROJECTION_INTERVAL_S)
            await self.notifier.wait(seen)
