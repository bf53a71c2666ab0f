"""The server's running state: runs executing in this process, the read models, wake-ups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence

from controlroom.api.hub import EventHub
from controlroom.api.notify import LogNotifier
from controlroom.domain.errors import ControlRoomError
from controlroom.domain.run import Run
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned
from controlroom.projections.views import Views

log = logging.getLogger("controlroom.server")
MAX_RUNS_VAR = "CONTROLROOM_MAX_CONCURRENT_RUNS"
PROJECTION_INTERVAL_S = 0.2


class Server:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.service = RunService(ctx)
        self.views = Views.for_store(ctx.store)
        self.notifier = LogNotifier()
        self.hub: EventHub
        self.tasks: dict[str, asyncio.Task[None]] = {}
        limit = int(os.environ.get(MAX_RUNS_VAR, "32") or "32")
        self._slots = asyncio.Semaphore(max(1, limit))
        self._projector: asyncio.Task[None] | None = None

    def observe(self, batch: Sequence[Positioned]) -> None:
        self.notifier(batch)

    def read_views(self) -> Views:
        """Read-your-writes: catch the views up before answering a GET."""
        self.views.catch_up()
        return self.views

    async def start(self) -> None:
        self.hub = EventHub(self.ctx.store, self.notifier)
        self.hub.start()
        self.views.catch_up()
        for row in self.views.runs(status="running"):
            self._spawn(row["run_id"], resume=True)
        self._projector = asyncio.create_task(self._project_forever())

    async def stop(self) -> None:
        """Stop executing; unfinished runs stay resumable from their events."""
        await self.hub.stop()
        tasks = [*self.tasks.values(), *([self._projector] if self._projector else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.views.close()

    def start_run(self, request: RunRequest) -> Run:
        run = self.service.start(request)
        self.notifier.notify()
        self._spawn(run.id, resume=False, run=run)
        return run

    def cancel(self, run_id: str) -> Run:
        run = self.service.cancel(run_id)
        self.notifier.notify()
        task = self.tasks.get(run_id)
        if task is not None:
            task.cancel()  # stops an in-flight model call; the cancellation is recorded
        return run

    def _spawn(self, run_id: str, resume: bool, run: Run | None = None) -> None:
        async def execute() -> None:
            async with self._slots:
                try:
                    if resume or run is None:
                        await self.service.resume(run_id, self.observe, self.hub.publish_partial)
                    else:
                        await self.service.execute(run, self.observe, self.hub.publish_partial)
                except ControlRoomError as exc:
                    log.warning("run %s stopped: %s", run_id, exc)
                finally:
                    self.tasks.pop(run_id, None)
                    self.notifier.notify()

        self.tasks[run_id] = asyncio.create_task(execute(), name=run_id)

    async def _project_forever(self) -> None:
        while True:
            seen = self.notifier.generation
            try:
                self.views.catch_up()
            except Exception:  # keep serving; the next pass retries from the tracked position
                log.exception("projection catch-up failed")
            # Catch up in batches, not per commit: live feeds come first on this loop, and
            # every GET catches up for itself before it reads.
            await asyncio.sleep(PROJECTION_INTERVAL_S)
            await self.notifier.wait(seen)
