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
from controlroom.engine.plan_driver import PlanDrive
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.traces_export import export_for, export_forever
from controlroom.projections.views import Views

log = logging.getLogger("controlroom.server")
PROJECTION_INTERVAL_S = 0.2
#: How long a read waits for the catch-up loop to pass the log's head as the read found it
#: (the policies' reactions to what was just committed: an issue a run's DoD calls for).
READ_WAIT_S = 2.0


class Server:
    def __init__(self, ctx: Context, *, execute: bool = True) -> None:
        self.ctx = ctx
        self.service = RunService(ctx)
        self.views = Views.for_store(ctx.store, ctx.workspace.root)
        self.followers = Followers(ctx.store, self.views)
        #: Followed by the loop below, not by `read_views`: GETs of runs never wait for it.
        self.analytics = AnalyticsProjection.for_workspace(
            ctx.store, ctx.workspace.root, ctx.settings.analytics
        )
        #: The traces projection's exporter, when OTEL_EXPORTER_OTLP_ENDPOINT is set: a loop
        #: of its own, so a slow receiver never holds up the catch-up loop reads wait for.
        self.traces = export_for(ctx.store)
        self._traces_task: asyncio.Task[None] | None = None
        self.notifier = LogNotifier()
        self.hub: EventHub
        self.executor: Executor
        self.max_concurrent_runs = ctx.settings.max_concurrent_runs
        #: False with `serve --no-execute`: runs are queued for workers, never run here.
        self.execute = execute
        self._follower_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscription: Subscription[Any] | None = None
        #: The log's position the catch-up loop has followed to (policies and views).
        self.followed_to = 0
        self._followed = threading.Condition()

    def _on_commit(
        self, *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
    ) -> None:
        # Commits happen in worker threads: wake the hub and the followers on the loop.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.notifier.notify)

    def read_views(self) -> Views:
        """Read-your-writes for a GET: what was committed before the read, with the
        policies' reactions to it. Reads are reads: no policy runs here, so no GET records
        an event; the read waits (at most `READ_WAIT_S`) for the catch-up loop to pass the
        log's head, then catches the read models up. Blocking: call it from a thread."""
        if self._follower_task is not None and not self._follower_task.done():
            head = self.ctx.store.max_position()
            with self._followed:
                self._followed.wait_for(lambda: self.followed_to >= head, timeout=READ_WAIT_S)
        self.views.catch_up()
        return self.views

    def _follow_once(self) -> None:
        """One pass of the policies and the read models (in a thread)."""
        head = self.ctx.store.max_position()
        self.followers.catch_up()
        with self._followed:
            self.followed_to = max(self.followed_to, head)
            self._followed.notify_all()

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
        self.plan_drive = PlanDrive(
            self.ctx, self.executor if self.execute else None, self._follow_once
        )
        await asyncio.to_thread(self.followers.catch_up)
        unfinished = [row.run_id for row in self.views.query.runs(status="running")]
        if self.execute:
            await self.executor.start(unfinished)
        self._follower_task = asyncio.create_task(self._follow_forever())
        if self.traces is not None:
            self._traces_task = asyncio.create_task(export_forever(self.traces))
        self._listen_to_other_processes()

    def _listen_to_other_processes(self) -> None:
        """On PostgreSQL, commits by other processes (workers, other servers) wake the live
        feeds at once through LISTEN/NOTIFY (the library's subscription); on SQLite the feeds
        poll the log instead (every half second while idle)."""
        recorder = self.ctx.store.recorder
        if self.ctx.store.backend != "postgres":
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
        for task in (self._follower_task, self._traces_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self.views.close()
        self.analytics.close()
        if self.traces is not None:
            self.traces.close()

    async def start_run(self, request: RunRequest) -> Run:
        if not self.execute:
            return await asyncio.to_thread(self.service.start, request)  # queued
        return await self.executor.submit(request)

    async def cancel(self, run_id: str) -> Run:
        return await self.executor.cancel(run_id)

    async def _follow_forever(self) -> None:
        while True:
            seen = self.notifier.generation
            try:
                # Off the loop: policies and projections write SQLite.
                # The policies and views, then the plans' due reviews and runs: the same
                # pass `plan start` makes (`engine/plan_driver.py`).
                await self.plan_drive.step(self.views.plans.unreviewed)
                await asyncio.to_thread(self.analytics.catch_up, wait=False)
            except Exception:  # keep serving; the next pass retries from the tracked positions
                log.exception("catch-up failed")
            # Catch up in batches, not per commit: live feeds come first on this loop, and
            # a GET waits for the pass that follows what it read after.
            await asyncio.sleep(PROJECTION_INTERVAL_S)
            await self.notifier.wait(seen)
