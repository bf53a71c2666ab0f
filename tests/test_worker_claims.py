"""Which queued runs a worker takes on a tick: the oldest claimable ones, no more than it has
room for (engine level; the multi-process behaviour is in test_workers.py)."""

from __future__ import annotations

from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.worker import Worker


def test_a_worker_scans_only_as_many_claimable_runs_as_it_has_room_for(ctx: Context) -> None:
    service = RunService(ctx)
    queued = [service.start(RunRequest("prose review", {})).id for _ in range(5)]
    held = service.start(RunRequest("prose review", {}), "otherhost:1").id  # a live claim
    loaded: list[str] = []
    load = ctx.store.load

    def counting_load(cls: type, run_id: str) -> object:
        loaded.append(run_id)
        return load(cls, run_id)

    ctx.store.load = counting_load  # type: ignore[assignment,method-assign]
    worker = Worker(ctx, lambda: [held, *queued], Followers(ctx.store), concurrency=8)
    assert worker.claimable(2) == queued[:2]
    assert loaded == [held, *queued[:2]]  # the other three were never loaded
    assert worker.claimable() == queued
    assert worker.claimable(0) == []
