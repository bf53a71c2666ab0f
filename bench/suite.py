"""The benchmark suite: one command, one table, each figure beside its raw baseline measured
in the same run, on SQLite and (when reachable) PostgreSQL.

    .venv/bin/python bench/suite.py [--quick] [--postgres DSN] [--markdown FILE]

Rows:
- per-step cost of the main job (11 steps, offline model at zero latency) and of a recipe of
  8 trivial tool steps, beside a raw `eventsourcing` save of one small event per step, and
  beside the library's own recorder storing the very records those runs committed, commit
  by commit; and the same cost less what the steps record themselves spending (each
  receipt's tool time, each model call's latency), beside the raw save;
- 1, 10 and 50 runs of the main job at once, model calls taking 200 ms, beside one run's
  wall time (the target: 50 runs within 1.3x of one);
- 1, 2 and 4 worker processes on PostgreSQL over queued runs at 200 ms per model call,
  beside one worker's throughput;
- projection rebuild beside the decoded read of the same log;
- CLI start-up (`controlroom --help`) beside a bare `python -c pass`.

Machines are noisy: every ratio compares figures taken in the same run, minutes apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Final
from uuid import uuid4

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import StoredEvent

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from controlroom.domain.run import RunStatus  # noqa: E402
from controlroom.domain.run_events import (  # noqa: E402
    AgentResponded,
    ReceiptIssued,
    RunCancelled,
    RunCompleted,
    RunFailed,
)
from controlroom.engine import event_loop  # noqa: E402
from controlroom.engine.context import Context  # noqa: E402
from controlroom.engine.executor import Executor  # noqa: E402
from controlroom.engine.service import RunRequest, RunService  # noqa: E402
from controlroom.engine.settings import Settings  # noqa: E402
from controlroom.eventstore.config import store_env  # noqa: E402
from controlroom.eventstore.postgres import prepared_schema  # noqa: E402
from controlroom.eventstore.store import Positioned  # noqa: E402
from controlroom.projections.views import Views  # noqa: E402
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult  # noqa: E402
from controlroom.tools.workspace import Workspace  # noqa: E402

CLI = str(Path(sys.executable).parent / "controlroom")
#: The main job as `scripts/demo` runs it (routed to creative_draft_scene).
DRAFT = "Draft scene 4 from the outline"
DRAFT_STEPS: Final = 11  # its recipe's 3 tool steps, 5 agents, 2 review gates and the write
TRIVIAL = {
    "recipe_id": "trivial_steps",
    "phase_a": [{"step_id": f"s{i}", "tool": "noop", "output_slot": f"slot{i}"} for i in range(8)],
}
Row = tuple[str, str, str, str, str]  # what, store, ours, baseline, ratio


class NoopArgs(ToolArgs):
    pass


class NoopTool:
    name: ClassVar[str] = "noop"
    description: ClassVar[str] = "does nothing: the engine's own cost is all that is left"
    args_model: ClassVar[type[ToolArgs]] = NoopArgs

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        return ToolResult(output={}, summary="nothing")


class Counter(Aggregate):
    def __init__(self) -> None:
        self.count = 0

    @event("Stepped")
    def step(self, index: int) -> None:
        self.count = index


@contextmanager
def workspace_copy() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", target, ignore=shutil.ignore_patterns(".control-room")
        )
        overrides = target / ".control-room" / "recipes"
        overrides.mkdir(parents=True)
        (overrides / "trivial.json").write_text(json.dumps(TRIVIAL))
        # The main job creates the scene's file and refuses to overwrite one: here it is
        # run again and again, so it replaces it (the same work, the same events).
        main_job = json.loads((REPO / "recipes" / "creative_draft_scene.json").read_text())
        for step in main_job["phase_b"]:
            if step.get("kind") == "write_file":
                step["mode"] = "replace"
        for step in main_job["phase_a"]:
            if step.get("tool") == "outline_analyzer":
                # Replaced on purpose: the check that refuses to draft a scene already
                # written (before any model call) would stop every run after the first.
                step["args"]["drafting"] = False
        (overrides / "creative_draft_scene.json").write_text(json.dumps(main_job))
        yield target


def settings_set() -> list[str]:
    """The environment's CONTROLROOM_ settings (they apply to the suite's runs): NAME=value."""
    return [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CONTROLROOM_")]


def open_ctx(workspace: Path, store: str, **env: str) -> Context:
    # The environment's settings apply (CONTROLROOM_PHASE_A_AT_ONCE, ...), as they do to the
    # commands; the store is the suite's own.
    settings = Settings.from_env({**os.environ, "CONTROLROOM_STORE": store, **env})
    tools = ToolRegistry.default(with_plugins=False).with_tools(NoopTool())
    return Context.open(workspace, settings=settings, tools=tools)


def fresh_store_spec(kind: str, dsn: str | None) -> str:
    if kind == "sqlite":
        return f"sqlite:bench-{uuid4().hex}.sqlite"
    assert dsn is not None
    return f"{dsn}?schema=bench_{uuid4().hex[:12]}"


def drop_schema(spec: str) -> None:
    if "schema=" not in spec:
        return
    import psycopg

    from controlroom.eventstore.postgres import conninfo, postgres_env

    env = postgres_env(spec)
    with psycopg.connect(conninfo(env), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{env["POSTGRES_SCHEMA"]}" CASCADE')


@dataclass(frozen=True)
class PerStep:
    """Median seconds per step of a recipe's runs, and the baselines beside them."""

    ours: float
    #: `ours` less the work the steps record themselves doing (each receipt's tool time,
    #: each agent call's latency): what the engine around the steps costs.
    engine: float
    #: a raw `eventsourcing` save of one small event per step
    raw: float
    #: the recorder inserting the very records our runs committed, commit by commit (what
    #: storing the steps' own events costs, with no engine around it)
    same: float
    #: bytes of stored event state a step commits, on a store that has run the recipe before
    #: (a prompt's text is stored once per store: domain/texts.py)
    bytes: float


def per_step(
    kind: str, dsn: str | None, recipe: str, steps: int, runs: int, rounds: int
) -> PerStep:
    """Run `recipe` (`steps` steps a run) `runs` times a round, beside the baselines."""
    spec, raw_spec = fresh_store_spec(kind, dsn), fresh_store_spec(kind, dsn)
    with workspace_copy() as workspace:
        ctx = open_ctx(workspace, spec)
        service = RunService(ctx)
        raw_env = dict(store_env(workspace, raw_spec))
        with prepared_schema(raw_env):
            raw_app = Application[object](env=raw_env)
        commits: list[list[StoredEvent]] = []
        work_s = [0.0]  # what the steps recorded spending in tools and model calls

        def keep(*, committed: list[Positioned], **_: object) -> None:
            to_stored = ctx.store.mapper.to_stored_event
            commits.append([to_stored(p.event) for p in committed])
            for p in committed:
                if isinstance(p.event, ReceiptIssued):
                    work_s[0] += p.event.duration_ms / 1000
                elif isinstance(p.event, AgentResponded):
                    work_s[0] += p.event.latency_ms / 1000

        async def ours_round() -> tuple[float, float]:
            commits.clear()
            work_s[0] = 0.0
            started = time.perf_counter()
            for _ in range(runs):
                final = await service.execute(service.start(RunRequest(recipe, {})))
                assert final.status == RunStatus.DONE, final.error
                assert final.total_steps == steps, (recipe, final.total_steps)
            wall = time.perf_counter() - started
            return wall / (runs * steps), (wall - work_s[0]) / (runs * steps)

        def same_round() -> float:
            suffix = uuid4().hex[:8]  # new streams each round, each keeping its versions
            renamed = [
                [
                    StoredEvent(f"{e.originator_id}-{suffix}", e.originator_version, e.topic,
                                e.state)
                    for e in group
                ]
                for group in commits
            ]  # fmt: skip
            started = time.perf_counter()
            for group in renamed:
                raw_app.recorder.insert_events(group)
            return (time.perf_counter() - started) / (runs * steps)

        def raw_round() -> float:
            started = time.perf_counter()
            for _ in range(runs):
                counter = Counter()
                raw_app.save(counter)
                for index in range(steps):
                    counter.step(index)
                    raw_app.save(counter)
            return (time.perf_counter() - started) / (runs * steps)

        ctx.store.observe(keep)
        event_loop.run(ours_round())  # warm-up
        raw_round()
        ours, engine, raw, same, size = [], [], [], [], []
        for _ in range(rounds):
            whole, less_work = event_loop.run(ours_round())
            ours.append(whole)
            engine.append(less_work)
            raw.append(raw_round())
            same.append(same_round())
            size.append(sum(len(e.state) for group in commits for e in group) / (runs * steps))
        ctx.store.unobserve(keep)
        ctx.close()
        raw_app.close()
    for used in (spec, raw_spec):
        drop_schema(used)
    median = statistics.median
    return PerStep(median(ours), median(engine), median(raw), median(same), median(size))


def concurrent_runs(
    kind: str, dsn: str | None, counts: list[int], *, together: bool = True
) -> dict[int, float]:
    """Wall time of N runs of the main job at once, model calls taking 200 ms: submitted
    together (as N requests at once are), or one after another, each submission awaited."""
    spec = fresh_store_spec(kind, dsn)
    walls: dict[int, float] = {}
    with workspace_copy() as workspace:
        # The offline model reads its simulated latency when it is first used.
        os.environ["CONTROLROOM_OFFLINE_LATENCY_MS"] = "200"
        ctx = open_ctx(workspace, spec)

        async def wave(n: int) -> float:
            executor = Executor(ctx, max_concurrent=ctx.settings.max_concurrent_runs)
            await executor.start([])
            started = time.perf_counter()
            if together:
                submitted = [executor.submit(RunRequest(DRAFT, {})) for _ in range(n)]
                ids = [run.id for run in await asyncio.gather(*submitted)]
            else:
                ids = [(await executor.submit(RunRequest(DRAFT, {}))).id for _ in range(n)]
            while executor.tasks:
                await asyncio.gather(*executor.tasks.values(), return_exceptions=True)
            wall = time.perf_counter() - started
            await executor.stop()
            for run_id in ids:  # a figure for runs that failed half-way would mean nothing
                final = executor.service.load(run_id)
                assert final.status == RunStatus.DONE, final.error
            return wall

        try:
            for n in counts:
                walls[n] = event_loop.run(wave(n))
        finally:
            del os.environ["CONTROLROOM_OFFLINE_LATENCY_MS"]
            ctx.close()
    drop_schema(spec)
    return walls


RUN_ENDINGS = (RunCompleted, RunFailed, RunCancelled)
#: How long the workers may take over their queue before the benchmark gives up on them.
WORKERS_DEADLINE_S: Final = 600.0


def drafts_apart(workspace: Path) -> str:
    """Makes the main job write each queued run's draft to a file of its own, named by the
    run's `queued` argument, in a folder the workspace listing leaves out (a hidden one);
    returns the folder. Drafts of one scene finishing side by side conflict (the second finds
    the file changed since it read it, and fails). In a folder the layout reads, each run
    would also read every draft written before it: with 200 scenes more in the outline, each
    drafted by a run of its own, a run's CPU grew from 14.5 ms to 23-30 ms."""
    folder = ".queued-drafts"
    recipe = workspace / ".control-room" / "recipes" / "creative_draft_scene.json"
    main_job = json.loads(recipe.read_text())
    for step in main_job["phase_b"]:
        if step.get("kind") == "write_file":
            step["path"] = folder + "/scene-{{task.args.scene_number:02d}}-{{task.args.queued}}.md"
    recipe.write_text(json.dumps(main_job))
    return folder


def follow_endings(ctx: Context, after: int, endings: dict[str, list[str]]) -> int:
    """Adds each run ending logged after `after` to `endings` (its name, by run id); returns
    the position reached."""
    for positioned in ctx.store.read_log(after=after):
        after, ended = positioned.position, positioned.event
        if isinstance(ended, RUN_ENDINGS):
            endings.setdefault(str(ended.originator_id), []).append(type(ended).__name__)
    return after


def check_queue_drained(service: RunService, ids: list[str], endings: dict[str, list[str]]) -> None:
    """Every queued run finished exactly once, as done: one terminal event each, a
    `RunCompleted`, and the run itself done. Raises, naming the runs, otherwise."""
    queued = set(ids)
    problems = [
        f"{run_id}: not queued, yet {' + '.join(ended)}"
        for run_id, ended in endings.items()
        if run_id not in queued
    ]
    for run_id in ids:
        ended, final = endings.get(run_id, []), service.load(run_id)
        if ended != ["RunCompleted"] or final.status != RunStatus.DONE:
            logged = " + ".join(ended) or "no ending logged"
            problems.append(f"{run_id}: {logged}, {final.status.value} ({final.error})")
    if problems:
        raise RuntimeError(
            f"workers: {len(problems)} runs did not finish exactly once as done, of "
            f"{len(ids)} queued: " + "; ".join(problems[:5])
        )


def workers_throughput(dsn: str, counts: list[int], runs: int) -> dict[int, float]:
    """Runs per second finished by N worker processes over `runs` queued runs of the main job,
    each writing its draft to a file of its own; every run must end done, once."""
    rates: dict[int, float] = {}
    for n in counts:
        spec = fresh_store_spec("postgres", dsn)
        try:
            rates[n] = workers_round(spec, n, runs)
        finally:
            drop_schema(spec)
    return rates


def workers_round(spec: str, n: int, runs: int) -> float:
    """Runs per second finished by `n` workers over `runs` queued runs, in store `spec`."""
    with workspace_copy() as workspace:
        env = {**os.environ, "CONTROLROOM_STORE": spec, "CONTROLROOM_OFFLINE_LATENCY_MS": "200"}
        folder = workspace / drafts_apart(workspace)
        ctx = open_ctx(workspace, spec)
        try:
            service = RunService(ctx)
            ids = [service.start(RunRequest(DRAFT, {"queued": i})).id for i in range(runs)]
            queued, endings = set(ids), dict[str, list[str]]()
            position = ctx.store.max_position()
            started = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [CLI, "worker", "-w", str(workspace), "--poll", "0.1", "--concurrency", "8"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for _ in range(n)
            ]
            try:
                # Follow the log for run endings rather than loading 200 runs every time
                # round: that cost a core, on a machine whose two the workers compete for.
                while len(queued & endings.keys()) < len(queued):
                    if time.perf_counter() - started > WORKERS_DEADLINE_S:
                        break
                    time.sleep(0.2)
                    position = follow_endings(ctx, position, endings)
                rate = runs / (time.perf_counter() - started)
            finally:
                for proc in procs:
                    proc.send_signal(signal.SIGTERM)
                for proc in procs:
                    proc.wait(timeout=60)
            follow_endings(ctx, position, endings)  # what they logged until they stopped, too
            check_queue_drained(service, ids, endings)
            drafts = len(list(folder.iterdir()))
            if drafts != runs:
                raise RuntimeError(f"workers: {drafts} drafts written by {runs} queued runs")
            return rate
        finally:
            ctx.close()


def rebuild_vs_read(kind: str, dsn: str | None, runs: int) -> tuple[float, float]:
    """(rebuild, decoded read) events per second over the same log."""
    spec = fresh_store_spec(kind, dsn)
    with workspace_copy() as workspace:
        ctx = open_ctx(workspace, spec)
        service = RunService(ctx)

        async def fill() -> None:
            for _ in range(runs):
                await service.execute(service.start(RunRequest(DRAFT, {})))

        event_loop.run(fill())
        events = ctx.store.max_position()
        started = time.perf_counter()
        decoded = sum(1 for _ in ctx.store.read_log())
        read_s = time.perf_counter() - started
        with Views.for_store(ctx.store, workspace) as views:
            started = time.perf_counter()
            views.rebuild()
            rebuild_s = time.perf_counter() - started
        ctx.close()
    drop_schema(spec)
    assert decoded == events or kind == "postgres"  # a sequence may skip positions
    return decoded / rebuild_s, decoded / read_s


def cli_startup(times: int = 5) -> tuple[dict[str, float], float]:
    """Median wall time of `--help`, and of `runs` and `show RUN` on a workspace with one
    run of the main job; and of a bare `python -c pass`, in the same sitting."""

    def median_of(command: list[str]) -> float:
        walls = []
        for _ in range(times):
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            walls.append(time.perf_counter() - started)
        return statistics.median(walls)

    # The example as a writer has it (workspace_copy's recipes name a tool only this
    # process registers: the commands would warn about them, and check them every time).
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        ran = subprocess.run(
            [CLI, "run", DRAFT, "-w", str(workspace), "-q", "--json"],
            capture_output=True,
            check=True,
            text=True,
        )
        run_id = json.loads(ran.stdout)["run_id"]
        figures = {
            "--help": median_of([CLI, "--help"]),
            "runs": median_of([CLI, "runs", "-w", str(workspace)]),
            "show": median_of([CLI, "show", run_id, "-w", str(workspace)]),
        }
    return figures, median_of([sys.executable, "-c", "pass"])


def postgres_reachable(dsn: str) -> bool:
    try:
        import psycopg

        from controlroom.eventstore.postgres import conninfo, postgres_env

        with psycopg.connect(conninfo(postgres_env(dsn)), connect_timeout=3):
            return True
    except Exception:
        return False


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


SECTIONS: Final = ("per-step", "concurrent", "rebuild", "workers", "cli")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about 2 minutes)")
    parser.add_argument(
        "--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="base DSN"
    )
    parser.add_argument("--markdown", help="also write the table to this Markdown file")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS,
        help="run only this part (repeatable); every part by default",
    )
    ns = parser.parse_args()
    only = set(ns.only or SECTIONS)
    quick = ns.quick
    backends = ["sqlite"] + (["postgres"] if postgres_reachable(ns.postgres) else [])
    rows: list[Row] = []

    def add(what: str, store: str, ours: str, base: str, ratio: float, note: str = "") -> None:
        rows.append((what, store, ours, base, f"{ratio:.2f}x{note}"))
        print(" | ".join(rows[-1]), flush=True)

    print(f"event loop: {event_loop.loop_name()}", flush=True)
    for setting in settings_set():
        print(f"setting: {setting}", flush=True)
    print("what | store | ours | baseline | ratio", flush=True)
    for kind in backends:
        if "per-step" in only:
            runs, rounds = (5, 3) if quick else (20, 5)
            for label, recipe, steps in (
                ("main job", DRAFT, DRAFT_STEPS),
                ("trivial steps", "trivial_steps", len(TRIVIAL["phase_a"])),
            ):
                cost = per_step(kind, ns.postgres, recipe, steps, runs, rounds)
                what = f"per step, {label}"
                add(what, kind, ms(cost.ours), f"raw save {ms(cost.raw)}", cost.ours / cost.raw)
                add(
                    what,
                    kind,
                    ms(cost.ours),
                    f"storing its own events {ms(cost.same)}",
                    cost.ours / cost.same,
                )
                add(
                    f"{what}, less the steps' own work",
                    kind,
                    ms(cost.engine),
                    f"raw save {ms(cost.raw)}",
                    cost.engine / cost.raw,
                )
                if label == "main job":  # bytes: against release 0.2's 4.4 KB a step
                    add(
                        f"bytes per step, {label}",
                        kind,
                        f"{cost.bytes / 1024:.1f} KB",
                        "release 0.2: 4.4 KB",
                        cost.bytes / (4.4 * 1024),
                    )
        if "concurrent" in only:
            counts = [1, 10, 50]
            walls = concurrent_runs(kind, ns.postgres, counts)
            for n in counts[1:]:
                add(
                    f"{n} runs at once (200 ms calls)",
                    kind,
                    f"{walls[n]:.2f} s",
                    f"1 run {walls[1]:.2f} s",
                    walls[n] / walls[1],
                )
            walls = concurrent_runs(kind, ns.postgres, [1, 50], together=False)
            add(
                "50 runs, submitted one by one",
                kind,
                f"{walls[50]:.2f} s",
                f"1 run {walls[1]:.2f} s",
                walls[50] / walls[1],
            )
        if "rebuild" in only:
            rebuild, read = rebuild_vs_read(kind, ns.postgres, 20 if quick else 100)
            add(
                "projection rebuild",
                kind,
                f"{rebuild:,.0f} ev/s",
                f"decoded read {read:,.0f} ev/s",
                rebuild / read,
            )
    if "postgres" in backends and "workers" in only:
        queued = 24 if quick else 200
        rates = workers_throughput(ns.postgres, [1, 2, 4], queued)
        for n in (2, 4):
            add(
                f"{n} workers, {queued} queued runs",
                "postgres",
                f"{rates[n]:.2f} runs/s",
                f"1 worker {rates[1]:.2f} runs/s",
                rates[n] / rates[1],
            )
    if "cli" in only:
        commands, bare = cli_startup()
        for command, wall in commands.items():
            add(
                f"CLI start-up ({command})",
                "sqlite",
                f"{wall * 1000:.0f} ms",
                f"python -c pass {bare * 1000:.0f} ms",
                wall / bare,
            )
    if ns.markdown:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        machine = (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"event loop {event_loop.loop_name()}"
        )
        if settings_set():
            machine += ", with " + " ".join(f"`{s}`" for s in settings_set())
        lines = [
            f"Measured {stamp} on {machine}{' (--quick sizes)' if quick else ''}.",
            "",
            "| what | store | ours | baseline | ratio |",
            "|---|---|---|---|---|",
            *(f"| {' | '.join(row)} |" for row in rows),
            "",
        ]
        Path(ns.markdown).write_text("\n".join(lines))
        print(f"written to {ns.markdown}")


if __name__ == "__main__":
    main()
