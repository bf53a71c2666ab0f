"""Runs a run and the runs it starts, in the foreground (`controlroom run`, `resume`).

Nothing here decides anything: a `child_run` step records its request and waits, the
tracked policies (`engine/child_policies.py`) start the children and settle the step, and
this loop only lets the followers catch up and executes whichever runs of the tree can go
on, several at once, until the root has finished or waits on what only a person can give.
A SIGKILL at any moment loses nothing: `controlroom resume` (or `serve`, a worker) picks the
tree up from its events, each child started once.
"""

from __future__ import annotations

import asyncio
import logging

from controlroom.domain.errors import ClaimLostError, ControlRoomError, RunClaimedError
from controlroom.domain.run import Run, RunStatus
from controlroom.engine.child_policies import tree_runs
from controlroom.engine.context import Context
from controlroom.engine.followers import CatchesUp
from controlroom.engine.hooks import PartialHook
from controlroom.engine.service import RunService

log = logging.getLogger("controlroom.tree")

#: How long to wait before looking again at a run another live process holds.
POLL_S = 0.5
#: How many times one run of the tree is taken up by this loop: each time it runs until it
#: finishes or waits, so only a run that keeps stopping on an error comes near this.
MAX_TAKE_UPS = 50


def _listed(ctx: Context, root: Run) -> list[Run]:
    return list(tree_runs(ctx.store, root))


async def drive_tree(
    ctx: Context,
    root: Run,
    followers: CatchesUp,
    owner: str,
    on_partial: PartialHook | None = None,
) -> Run:
    """Advance `root` (already executed once, or not) and its descendants here."""
    service = RunService(ctx)
    running: dict[str, asyncio.Task[Run]] = {}
    taken_up: dict[str, int] = {}
    try:
        while True:
            await asyncio.to_thread(followers.catch_up)
            root = service.load(root.id)
            if root.is_finished:
                return root
            tree = await asyncio.to_thread(_listed, ctx, root)
            ready = [r.id for r in tree if r.status == RunStatus.RUNNING and not r.is_waiting]
            for run_id in ready:
                if run_id not in running and taken_up.get(run_id, 0) < MAX_TAKE_UPS:
                    taken_up[run_id] = taken_up.get(run_id, 0) + 1
                    running[run_id] = asyncio.create_task(
                        service.resume(run_id, on_partial, owner=owner), name=run_id
                    )
            if not running:
                return root  # it waits on a person (or on work another process holds)
            done, _ = await asyncio.wait(running.values(), return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                run_id = task.get_name()
                running.pop(run_id, None)
                try:
                    task.result()
                except (ClaimLostError, RunClaimedError):
                    log.info("run %s: another process holds it", run_id)
                    await asyncio.sleep(POLL_S)
                except ControlRoomError as exc:
                    log.warning("run %s stopped: %s", run_id, exc)
    finally:
        for task in running.values():
            task.cancel()
        if running:
            await asyncio.gather(*running.values(), return_exceptions=True)
