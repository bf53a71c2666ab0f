"""Which queued runs a worker takes on a tick: the oldest claimable ones, no more than it has
room for (engine level; the multi-process behaviour is in test_workers.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections import Counter
from typing import Any

from controlroom.domain.run import RunStatus
from controlroom.engine.context import Context
from controlroom.engine.executor import Executor
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


def test_a_run_held_by_a_process_of_this_host_that_is_gone_is_taken_at_once(
    ctx: Context,
) -> None:
    """A killed worker's (or an interrupted `controlroom run`'s) claim is dead whatever its
    lease says: the run is not left waiting for the lease to run out."""
    service = RunService(ctx)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    here = socket.gethostname()
    dead = service.start(RunRequest("prose review", {}), f"{here}:{gone.pid}").id
    # Another live process of this host (this one's parent): its claim holds.
    alive = service.start(RunRequest("prose review", {}), f"{here}:{os.getppid()}").id
    elsewhere = service.start(RunRequest("prose review", {}), f"otherhost:{gone.pid}").id
    worker = Worker(ctx, lambda: [dead, alive, elsewhere], Followers(ctx.store))
    assert worker.claimable() == [dead]
    taken = asyncio.run(service.resume(dead, owner=worker.owner))
    assert taken.owner == worker.owner


def test_of_two_workers_racing_for_one_run_the_loser_does_none_of_its_work(ctx: Context) -> None:
    """The claim is recorded before any step: the loser learns it lost before performing
    the first step (a tool here; a model call, costing money, in other recipes)."""
    service = RunService(ctx)
    run_id = service.start(RunRequest("prose review", {})).id
    calls: Counter[str] = Counter()
    execute = ctx.tools.execute

    def counting(name: str, args: dict[str, Any], workspace: Any) -> Any:
        calls[name] += 1
        return execute(name, args, workspace)

    ctx.tools.execute = counting  # type: ignore[method-assign]

    async def race() -> int:
        first, second = Executor(ctx), Executor(ctx)
        first.owner, second.owner = "host-a:1", "host-b:2"  # two processes, two machines
        for executor in (first, second):
            await executor.start([])
            executor.spawn(run_id)
        await asyncio.gather(*first.tasks.values(), *second.tasks.values())
        for executor in (first, second):
            await executor.stop()
        return first.claims_lost + second.claims_lost

    assert asyncio.run(race()) == 1
    assert service.load(run_id).status == RunStatus.DONE
    assert calls and set(calls.values()) == {1}, calls
