"""Projection rebuild rate beside the store's own read rate of the same log, in one process.

Builds a store of RUNS finished runs (offline model), then times, in alternating rounds:
  - raw records: the recorder's select_notifications over the whole log (no decoding)
  - decoded read: the same log read as domain events (what any consumer must do)
  - rebuild: emptying every named projection and replaying the log into each (decode +
    fold + write, one transaction per projection)
Target: the rebuild reaches at least half the decoded-read rate of the same log.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from controlroom.engine.context import Context  # noqa: E402
from controlroom.engine.followers import Followers  # noqa: E402
from controlroom.engine.service import RunRequest, RunService  # noqa: E402
from controlroom.projections.views import Views  # noqa: E402

RUNS = 200
ROUNDS = 3
TASKS = ["Draft scene 4", "consistency check", "foreshadowing audit", "prose review"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        ctx = Context.open(workspace)
        service = RunService(ctx)

        async def fill() -> None:
            for i in range(RUNS):
                await service.execute(service.start(RunRequest(TASKS[i % len(TASKS)], {})))

        asyncio.run(fill())
        Followers(ctx.store).catch_up()  # the DoD-issue policy records its issues
        total = ctx.store.max_position()
        views = Views.for_store(ctx.store)
        raw, decoded, rebuild = [], [], []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            cursor, count = 0, 0
            while True:
                notes = ctx.store.recorder.select_notifications(
                    start=cursor, limit=1000, inclusive_of_start=False
                )
                count += len(notes)
                if len(notes) < 1000:
                    break
                cursor = notes[-1].id
            raw.append(count / (time.perf_counter() - started))
            started = time.perf_counter()
            count = sum(1 for _ in ctx.store.read_log(batch=1000))
            decoded.append(count / (time.perf_counter() - started))
            started = time.perf_counter()
            views.rebuild()
            rebuild.append(total / (time.perf_counter() - started))
        views.close()
        ctx.close()
    r, d, b = (statistics.median(x) for x in (raw, decoded, rebuild))
    print(f"log: {total} events from {RUNS} runs; median of {ROUNDS} rounds")
    print(f"raw record read : {r:>10,.0f} events/s")
    print(f"decoded read    : {d:>10,.0f} events/s")
    print(f"views rebuild   : {b:>10,.0f} events/s  ({', '.join(views.names())})")
    print(f"rebuild / raw read     : {b / r:.2f}")
    print(f"rebuild / decoded read : {b / d:.2f}  (target >= 0.50)")


if __name__ == "__main__":
    main()
