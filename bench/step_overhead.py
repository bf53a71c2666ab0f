"""Per-step cost of a run beside the raw cost of the event store, measured in one process.

Ours: the 11-step `creative_draft_scene` recipe on the example novel, offline model at zero
latency, SQLite store: tools, prompts, model, events and one durable commit per step.
Baseline: the `eventsourcing` library saving one small aggregate event per step to a
SQLite file of the same kind. Rounds alternate the two so machine noise hits both alike;
the ratio of medians is the figure to watch (target: at most 2x).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from uuid import uuid4

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from controlroom.domain.run_events import AgentResponded, ReceiptIssued  # noqa: E402
from controlroom.engine.context import Context  # noqa: E402
from controlroom.engine.service import RunRequest, RunService  # noqa: E402

RUNS_PER_ROUND = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ROUNDS = 5
STEPS = 11  # 3 tool steps, 5 agents, 2 review gates and the write


class Counter(Aggregate):
    def __init__(self) -> None:
        self.count = 0

    @event("Stepped")
    def step(self, index: int) -> None:
        self.count = index


def ours_per_step(service: RunService) -> tuple[float, float]:
    """(whole cost per step, cost per step outside tool and model work) in seconds."""
    run_ids: list[str] = []
    scenes = service.ctx.workspace.root / "Story" / "Scenes"
    before = set(scenes.iterdir())

    async def runs() -> None:  # one event loop, as in a long-running process
        for _ in range(RUNS_PER_ROUND):
            run = service.start(RunRequest("creative_draft_scene", {"scene_number": 4}))
            final = await service.execute(run)
            assert final.status.value == "done", final.error
            run_ids.append(run.id)
            # Drafting refuses a scene already written (in phase A, before any model call):
            # remove the draft so every run does the same work, drafting scene 4 afresh.
            for drafted in set(scenes.iterdir()) - before:
                drafted.unlink()

    started = time.perf_counter()
    asyncio.run(runs())
    elapsed = time.perf_counter() - started
    work_ms = sum(
        e.duration_ms if isinstance(e, ReceiptIssued) else e.latency_ms
        for run_id in run_ids
        for e in service.ctx.store.stream(run_id)
        if isinstance(e, ReceiptIssued | AgentResponded)
    )
    steps = RUNS_PER_ROUND * STEPS
    return elapsed / steps, (elapsed - work_ms / 1000) / steps


def baseline_per_step(app: Application[object]) -> float:
    started = time.perf_counter()
    for _ in range(RUNS_PER_ROUND):
        counter = Counter()
        app.save(counter)
        for index in range(STEPS):
            counter.step(index)
            app.save(counter)
    return (time.perf_counter() - started) / (RUNS_PER_ROUND * STEPS)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        ctx = Context.open(workspace)
        service = RunService(ctx)
        baseline = Application[object](
            env={
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": str(Path(tmp) / f"baseline-{uuid4().hex}.sqlite"),
            }
        )
        ours_per_step(service)  # warm-up: imports, caches, file creation
        baseline_per_step(baseline)
        ours, engine, raw = [], [], []
        for _ in range(ROUNDS):
            whole, overhead = ours_per_step(service)
            ours.append(whole)
            engine.append(overhead)
            raw.append(baseline_per_step(baseline))
        ctx.close()
    ours_ms, raw_ms = statistics.median(ours) * 1000, statistics.median(raw) * 1000
    engine_ms = statistics.median(engine) * 1000
    print(f"rounds: {ROUNDS} x {RUNS_PER_ROUND} runs x {STEPS} steps (median of rounds)")
    print(
        f"control room per step : {ours_ms:.3f} ms  (rounds: "
        + ", ".join(f"{x * 1000:.3f}" for x in ours)
        + ")"
    )
    print(
        f"raw eventsourcing save: {raw_ms:.3f} ms  (rounds: "
        + ", ".join(f"{x * 1000:.3f}" for x in raw)
        + ")"
    )
    print(
        f"engine only per step  : {engine_ms:.3f} ms  (whole cost minus the tool and model "
        "time recorded in the run's own events)"
    )
    print(f"ratio ours/raw        : {ours_ms / raw_ms:.2f}x  (target <= 2.00x)")
    print(f"ratio engine-only/raw : {engine_ms / raw_ms:.2f}x")


if __name__ == "__main__":
    main()
