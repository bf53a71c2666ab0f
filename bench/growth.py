"""Reads against history: what a read, an idle server and a new run cost on a store of 1k,
10k and 100k runs, beside the same figures on a store of one run.

    .venv/bin/python bench/growth.py [--sizes 1000,10000,100000] [--repeat 5] [--idle-s 10]
                                     [--postgres DSN] [--keep DIR] [--reuse DIR]

A copy of `examples/novel` gets one real run of the main job (offline model, through the
CLI) and is measured: the small store. Then its runs' stored records are copied under new
run ids (and their own receipt, session and trace ids) until the log holds each size's
runs, as `bench/analytics.py` does; the copies go straight into the log, so the read models
then catch up on them once (timed apart: a one-off, not part of the figures), and the
policies are moved past them (a finished run of no plan calls for no reaction). Each size
is then measured as the small store was:

- `controlroom show RUN` (the quick path, and the full one: `CONTROLROOM_QUICK_READS=0`),
  `controlroom runs --status running`, `controlroom runs` (a page: the newest 100) and
  `controlroom runs --limit 0` (every run: it grows with the store by what it prints), each
  a fresh process, median of `--repeat` after a warm-up;
- `GET /api/runs/ID` and `GET /api/runs?limit=100` against a real `controlroom serve` on
  127.0.0.1 (median of 100), and
  how long the server took from its start to its first answer;
- the CPU an idle `serve` and an idle `worker` use over `--idle-s` seconds
  (/proc/PID/stat);
- one worker tick (`engine/worker.py`: the followers' catch-up and the look for claimable
  runs), in a fresh process, on one event loop: the first and the median of the next 20;
- per step of a new run of the main job on that store, and the catch-up a command makes
  after it (policies and read models, as `controlroom run` does), fresh objects each time.

Every figure is printed with its ratio to the small store's. `--keep DIR` builds in DIR and
leaves it; `--reuse DIR` measures the store a `--keep` left there (one size, as it is),
beside a new small store: for before/after comparisons without copying again.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLI = str(Path(sys.executable).parent / "controlroom")
#: The main job as `scripts/demo` runs it (routed to creative_draft_scene), and its steps.
MAIN_JOB = "Draft scene 4 from the outline"
MAIN_STEPS = 11
GETS = 100
#: Worker ticks timed after the first.
TICKS = 20
#: Events copied per insert (one transaction each).
COPY_BATCH = 20_000
STATE_FILE = "growth.json"
#: Real runs of the main job whose records are copied.
TEMPLATES = 3


# -- the workspace and its store ---------------------------------------------------------------


def make_workspace(folder: Path) -> Path:
    """A copy of the example novel whose main job replaces the scene it writes (it runs
    again and again here: the same work, the same events)."""
    target = folder / "novel"
    shutil.copytree(
        ROOT / "examples" / "novel", target, ignore=shutil.ignore_patterns(".control-room")
    )
    overrides = target / ".control-room" / "recipes"
    overrides.mkdir(parents=True)
    main_job = json.loads((ROOT / "recipes" / "creative_draft_scene.json").read_text())
    for step in main_job["phase_b"]:
        if step.get("kind") == "write_file":
            step["mode"] = "replace"
    for step in main_job["phase_a"]:
        if step.get("tool") == "outline_analyzer":
            # The draft is replaced on purpose here: the check that refuses to draft a
            # scene already written (before any model call) would stop the second run.
            step["args"]["drafting"] = False
    (overrides / "creative_draft_scene.json").write_text(json.dumps(main_job))
    return target


def cli(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [CLI, *args, "-w", str(workspace)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"controlroom {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done.stdout


def real_run(workspace: Path) -> str:
    out = cli(workspace, "run", MAIN_JOB, "-q")
    found = re.search(r"\b(run_[0-9a-f]{16}): done", out)
    if found is None:
        raise RuntimeError(f"the main job did not finish:\n{out}")
    return found[1]


_PER_RUN = re.compile(rb"\b(run|rcpt|sess|tr)_([0-9a-f]{12,})\b")


def _renamer(copy: int) -> Any:
    """Each copy's own run, receipt, session and trace ids (same lengths: the JSON's size is
    the template's)."""
    salt = str(copy).encode()

    def rename(match: re.Match[bytes]) -> bytes:
        size = len(match[2])
        digest = hashlib.blake2b(match[1] + match[2] + salt, digest_size=16).hexdigest()
        return match[1] + b"_" + digest[:size].encode()

    return rename


def copy_runs(workspace: Path, total: int, first_copy: int) -> tuple[int, float]:
    """Copies of the finished runs in the log, under new ids, until it holds `total` runs;
    returns how many were copied and how long that took. The policies are then moved to the
    head: they have nothing to do for a finished run of no plan."""
    from eventsourcing.persistence import StoredEvent, Tracking

    from controlroom.engine.policies import bundled_policies
    from controlroom.eventstore.store import EventStore

    store = EventStore.for_workspace(workspace)
    try:
        notes = store.recorder.select_notifications(start=0, limit=1_000_000)
        streams: dict[str, list[Any]] = {}
        for note in notes:
            if str(note.originator_id).startswith("run_"):
                streams.setdefault(str(note.originator_id), []).append(note)
        templates = [s for s in streams.values() if s[-1].topic.endswith("RunCompleted")]
        have = len(streams)
        wanted = max(0, total - have)
        started = time.perf_counter()
        pending: list[StoredEvent] = []
        for n in range(wanted):
            copy = first_copy + n
            rename = _renamer(copy)
            for note in templates[copy % len(templates)]:
                state = _PER_RUN.sub(rename, note.state)
                new_id = _PER_RUN.sub(rename, str(note.originator_id).encode()).decode()
                pending.append(StoredEvent(new_id, note.originator_version, note.topic, state))
            if len(pending) >= COPY_BATCH:
                store.recorder.insert_events(pending)
                pending = []
        if pending:
            store.recorder.insert_events(pending)
        head = store.max_position()
        for policy in bundled_policies():
            if store.tracked_position(policy.name) < head:
                store.save(tracking=Tracking(policy.name, head))
        return wanted, time.perf_counter() - started
    finally:
        store.close()


def catch_up_once(workspace: Path) -> dict[str, float]:
    """The one-off catch-up of the read models (and analytics) after a copy."""
    from controlroom.engine.context import Context
    from controlroom.engine.followers import Followers
    from controlroom.projections.views import Views

    ctx = Context.open(workspace)
    took: dict[str, float] = {}
    try:
        started = time.perf_counter()
        with Views.for_store(ctx.store, ctx.workspace.root) as views:
            views.catch_up(batch_size=5000)
            took["views"] = time.perf_counter() - started
            started = time.perf_counter()
            Followers(ctx.store, views).catch_up()
            took["followers"] = time.perf_counter() - started
        started = time.perf_counter()
        try:
            from controlroom.projections.analytics import AnalyticsProjection

            analytics = AnalyticsProjection.for_workspace(
                ctx.store, ctx.workspace.root, ctx.settings.analytics
            )
            try:
                analytics.catch_up()
            finally:
                analytics.close()
            took["analytics"] = time.perf_counter() - started
        except Exception as exc:  # not this benchmark's subject: say so and go on
            print(f"  (analytics catch-up failed: {exc!r})", flush=True)
    finally:
        ctx.close()
    return took


def count_runs(workspace: Path) -> int:
    from controlroom.eventstore.store import EventStore
    from controlroom.projections.views import Views

    store = EventStore.for_workspace(workspace)
    try:
        with Views.for_store(store) as views:
            views.catch_up()
            (count,) = views.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
            return int(count)
    finally:
        store.close()


# -- measuring -----------------------------------------------------------------------------------


def timed_cli(workspace: Path, args: list[str], repeat: int, env: dict[str, str]) -> float:
    """Median wall time of a CLI command, each a fresh process, after one warm-up."""
    command = [CLI, *args, "-w", str(workspace)]
    full_env = {**os.environ, **env}
    times = []
    for n in range(repeat + 1):
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=full_env, check=False)  # fmt: skip
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.returncode} {done.stderr.decode()}")
        if n:
            times.append(took)
    return statistics.median(times)


def cpu_seconds(pid: int) -> float:
    """CPU time of a process, every thread, so far. The scheduler's own count in
    nanoseconds (/proc/PID/task/*/schedstat): /proc/PID/stat counts whole clock ticks, and
    an idle server's many short wake-ups read there as 2-3% of a core where `perf stat`
    measured 1.2%. A thread that ended is not counted (an idle process starts none)."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        return (
            sum(int((task / "schedstat").read_text().split()[0]) for task in tasks.iterdir()) / 1e9
        )
    except (OSError, ValueError, IndexError):  # no schedstat here: the tick count
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(pid: int, seconds: float) -> float:
    """Percent of one core used over `seconds`."""
    before, started = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.perf_counter() - started)


class Process:
    """A long-running `controlroom` command: its stderr is read as it comes (for the line
    that says it is ready), and it is stopped with SIGTERM."""

    def __init__(self, workspace: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [CLI, *args, "-w", str(workspace)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"no '{pattern}' from {self.proc.args!r}: {self.lines}")
                self._seen.wait(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def running(workspace: Path, *args: str) -> Iterator[Process]:
    process = Process(workspace, *args)
    try:
        yield process
    finally:
        process.stop()


def measure_serve(workspace: Path, run_id: str, idle_s: float) -> dict[str, float]:
    started = time.perf_counter()
    with running(workspace, "serve", "--port", "0") as served:
        port = int(served.wait_for(r"http://127\.0\.0\.1:(\d+)", 600)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def get(path: str = f"/api/runs/{run_id}") -> float:
            began = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
            return time.perf_counter() - began

        deadline = time.monotonic() + 600
        while True:  # the socket is bound before the app starts: it answers once started
            try:
                get()
                break
            except (ConnectionError, http.client.HTTPException):
                if time.monotonic() > deadline or served.proc.poll() is not None:
                    raise
                conn.close()
                time.sleep(0.05)
        first_answer = time.perf_counter() - started
        for _ in range(3):
            get()
        gets = statistics.median(get() for _ in range(GETS))
        page = statistics.median(get("/api/runs?limit=100") for _ in range(GETS))
        conn.close()
        time.sleep(1.0)
        cpu = idle_cpu(served.proc.pid, idle_s)
    return {"get": gets, "runs_page": page, "serve_start": first_answer, "serve_idle_cpu": cpu}


def measure_worker(workspace: Path, idle_s: float) -> float:
    with running(workspace, "worker") as worker:
        worker.wait_for(r"up to \d+ runs at once", 600)
        time.sleep(3.0)  # its first ticks: the followers' catch-up in a fresh process
        return idle_cpu(worker.proc.pid, idle_s)


def engine_part(workspace: Path, repeat: int) -> dict[str, float]:
    """In a fresh process (`--part engine`): worker ticks, then new runs of the main job."""
    done = subprocess.run(
        [sys.executable, __file__, "--part", "engine", "--reuse", str(workspace.parent),
         "--repeat", str(repeat)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line.removeprefix("RESULT ")))
    raise RuntimeError(f"the engine part failed:\n{done.stdout}\n{done.stderr}")


def engine_figures(workspace: Path, repeat: int) -> dict[str, float]:
    from controlroom.engine import event_loop
    from controlroom.engine.context import Context
    from controlroom.engine.followers import Followers
    from controlroom.engine.policies import PolicyRunner, bundled_policies
    from controlroom.engine.service import RunRequest, RunService
    from controlroom.engine.worker import Worker
    from controlroom.projections.views import Views

    ctx = Context.open(workspace)
    figures: dict[str, float] = {}
    views = Views.for_store(ctx.store, ctx.workspace.root)
    followers = Followers(ctx.store, views)

    def unfinished() -> list[str]:  # as `controlroom worker` asks (api/serve_cli.py)
        return [r.run_id for r in views.query.runs(status="running")]

    worker = Worker(ctx, unfinished, followers)

    async def tick_times() -> list[float]:  # on one event loop, as a worker ticks
        times = []
        for _ in range(TICKS + 1):
            started = time.perf_counter()
            await worker._tick()
            times.append(time.perf_counter() - started)
        return times

    ticks = event_loop.run(tick_times())
    figures["tick_first"] = ticks[0]
    figures["tick"] = statistics.median(ticks[1:])
    views.close()

    # The policies that follow events a main-job run never records, under new names: their
    # first pass over the whole log (a store opened by a release that adds a policy).
    renamed = [_Renamed(p) for p in bundled_policies() if not p.follows & COMMON]
    started = time.perf_counter()
    PolicyRunner(ctx.store, renamed).catch_up()
    figures["policies_first"] = time.perf_counter() - started

    service = RunService(ctx)
    per_step, after = [], []
    for n in range(repeat + 1):
        started = time.perf_counter()
        final = event_loop.run(service.execute(service.start(RunRequest(MAIN_JOB, {}))))
        took = time.perf_counter() - started
        assert final.status.value == "done", final.error
        started = time.perf_counter()
        with Views.for_store(ctx.store, ctx.workspace.root) as fresh:  # as a command does
            Followers(ctx.store, fresh).catch_up()
        if n:  # the first is a warm-up
            per_step.append(took / MAIN_STEPS)
            after.append(time.perf_counter() - started)
    figures["per_step"] = statistics.median(per_step)
    figures["after_run"] = statistics.median(after)
    ctx.close()
    return figures


#: Event types every copied run holds that policies follow (reacting to 100k of them is
#: real work, not a read): the policies that follow them are left out of `policies_first`.
COMMON = frozenset({"RunCompleted", "DodChecked"})


class _Renamed:
    """A bundled policy under a name no tracking row has yet."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.follows = policy, policy.follows
        self.name = f"{policy.name}.growth_{uuid4().hex[:8]}"

    def react(self, event: Any, unit: Any) -> None:
        self.policy.react(event, unit)


FIGURES = [
    # key, label, unit ("ms", "s" or "%")
    ("show", "show RUN (quick path)", "ms"),
    ("show_full", "show RUN (full path)", "ms"),
    ("runs_running", "runs --status running", "ms"),
    ("runs", "runs (the newest 100)", "ms"),
    ("runs_page", "GET /api/runs?limit=100", "ms"),
    ("runs_all", "runs --limit 0 (every run)", "ms"),
    ("get", "GET /api/runs/ID", "ms"),
    ("serve_start", "serve: start to first answer", "s"),
    ("serve_idle_cpu", "serve idle CPU (% of a core)", "%"),
    ("worker_idle_cpu", "worker idle CPU (% of a core)", "%"),
    ("tick_first", "worker tick, first", "ms"),
    ("tick", "worker tick", "ms"),
    ("per_step", "new run, per step", "ms"),
    ("after_run", "catch-up after a run", "ms"),
    ("policies_first", "new policies' first pass (one-off)", "ms"),
]


def measure(workspace: Path, run_id: str, ns: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    quick_off = {"CONTROLROOM_QUICK_READS": "0"}
    figures["show"] = timed_cli(workspace, ["show", run_id], ns.repeat, {})
    figures["show_full"] = timed_cli(workspace, ["show", run_id], ns.repeat, quick_off)
    figures["runs_running"] = timed_cli(workspace, ["runs", "--status", "running"], ns.repeat, {})
    figures["runs"] = timed_cli(workspace, ["runs"], ns.repeat, {})
    figures["runs_all"] = timed_cli(workspace, ["runs", "--limit", "0"], ns.repeat, {})
    figures.update(measure_serve(workspace, run_id, ns.idle_s))
    figures["worker_idle_cpu"] = measure_worker(workspace, ns.idle_s)
    figures.update(engine_part(workspace, ns.repeat))
    return figures


def shown(key: str, unit: str, value: float) -> str:
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.1f}%"


def table(results: list[tuple[str, dict[str, float]]]) -> str:
    small = results[0][1]
    head = "| figure | " + " | ".join(label for label, _ in results) + " |"
    lines = [head, "|" + "---|" * (len(results) + 1)]
    for key, label, unit in FIGURES:
        cells = []
        for n, (_, figures) in enumerate(results):
            value = figures.get(key)
            if value is None:
                cells.append("-")
                continue
            cell = shown(key, unit, value)
            if n and unit != "%" and small.get(key):
                cell += f" ({value / small[key]:.2f}x)"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_one(label: str, figures: dict[str, float], small: dict[str, float] | None) -> None:
    print(f"\n{label}:", flush=True)
    for key, name, unit in FIGURES:
        if key not in figures:
            continue
        ratio = ""
        if small is not None and unit != "%" and small.get(key):
            ratio = f"  {figures[key] / small[key]:.2f}x"
        print(f"  {name:<32} {shown(key, unit, figures[key]):>12}{ratio}", flush=True)


def small_store(folder: Path, ns: argparse.Namespace) -> tuple[Path, str, dict[str, float]]:
    workspace = make_workspace(folder)
    run_id = real_run(workspace)
    figures = measure(workspace, run_id, ns)
    print_one("small store (1 run)", figures, None)
    return workspace, run_id, figures


def drop_schema(spec: str) -> None:
    import psycopg

    from controlroom.eventstore.postgres import conninfo, postgres_env

    env = postgres_env(spec)
    with psycopg.connect(conninfo(env), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{env["POSTGRES_SCHEMA"]}" CASCADE')


def use_postgres(dsn: str, schema: str) -> str:
    separator = "&" if "?" in dsn else "?"
    spec = f"{dsn}{separator}schema={schema}"
    os.environ["CONTROLROOM_STORE"] = spec  # every part, here and in the children
    return spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="runs per store, ascending")
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats of each figure")
    parser.add_argument("--idle-s", type=float, default=10.0, help="seconds of idle CPU")
    parser.add_argument("--postgres", metavar="DSN", help="PostgreSQL (a schema of its own)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build in DIR, and keep it")
    parser.add_argument("--reuse", type=Path, metavar="DIR", help="measure what --keep left")
    parser.add_argument("--part", choices=("engine",), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.part:
        print("RESULT " + json.dumps(engine_figures(ns.reuse / "novel", ns.repeat)), flush=True)
        return
    sizes = [int(s) for s in ns.sizes.split(",") if s.strip()]
    scratch = Path(tempfile.mkdtemp(prefix="cr-bench-growth-"))
    schemas: list[str] = []
    try:
        if ns.postgres:
            schemas.append(use_postgres(ns.postgres, f"bench_growth_{uuid4().hex[:10]}"))
        print(f"CPU count {os.cpu_count()}, load {os.getloadavg()[0]:.2f}", flush=True)
        _, _, small = small_store(scratch / "small", ns)
        results: list[tuple[str, dict[str, float]]] = [("1 run", small)]
        if ns.reuse:
            saved = json.loads((ns.reuse / STATE_FILE).read_text())
            if saved.get("store"):
                os.environ["CONTROLROOM_STORE"] = saved["store"]
            workspace = ns.reuse / "novel"
            started = time.perf_counter()
            runs = count_runs(workspace)  # opening the store: a new index is made here
            print(f"\nreused {workspace}: {runs:,} runs, opened in "
                  f"{time.perf_counter() - started:.1f}s", flush=True)  # fmt: skip
            figures = measure(workspace, saved["run_id"], ns)
            print_one(f"{runs:,} runs", figures, small)
            results.append((f"{runs:,} runs", figures))
        else:
            home = ns.keep or scratch / "big"
            home.mkdir(parents=True, exist_ok=True)
            if ns.postgres:  # the big store's own schema
                schemas.append(use_postgres(ns.postgres, f"bench_growth_{uuid4().hex[:10]}"))
            workspace = make_workspace(home)
            run_id = real_run(workspace)
            for _ in range(TEMPLATES - 1):  # a few real runs, to copy
                real_run(workspace)
            state = {"run_id": run_id, "store": os.environ.get("CONTROLROOM_STORE", "")}
            copied = 0
            for size in sizes:
                count, copy_s = copy_runs(workspace, size, copied)
                copied += count
                took = catch_up_once(workspace)
                print(
                    f"\n{size:,} runs: copied {count:,} in {copy_s:.1f}s; one-off catch-up: "
                    + ", ".join(f"{k} {v:.1f}s" for k, v in took.items()),
                    flush=True,
                )
                figures = measure(workspace, run_id, ns)
                print_one(f"{size:,} runs", figures, small)
                results.append((f"{size:,} runs", figures))
                (home / STATE_FILE).write_text(json.dumps({**state, "runs": size}))
        print("\n" + table(results), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not ns.keep:
            for spec in schemas:
                drop_schema(spec)


if __name__ == "__main__":
    main()
