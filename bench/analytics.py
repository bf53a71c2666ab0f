"""DuckDB analytics: ingest rate beside the raw read rate of the same log, and query times.

    .venv/bin/python bench/analytics.py [--events 1000000] [--batch 122880] [--postgres DSN]

Builds a SQLite store in a temporary folder (with `--postgres`, a schema of its own in that
database, dropped after): one run of every bundled recipe (done and DoD failures, with their
issues) is executed for real, and its stored records are then copied under new run ids,
spread over 60 days, until the log holds `--events` events. Each copy also gets its own
receipt, session and trace ids and call durations, as real runs do (copies identical but
for the run id compress into a few hundred distinct payloads and flatter the ingest).
Then, each part in a fresh process: the raw read rates (the recorder's
`select_notifications`, and the Arrow reader the ingest uses; no decoding) and the decoded
read rate (orjson per event); the ingest rate of a rebuild into analytics.duckdb, and the
time of every built-in report over it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from uuid import uuid4

import orjson
from eventsourcing.persistence import StoredEvent

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controlroom.engine.context import Context  # noqa: E402
from controlroom.engine.followers import Followers  # noqa: E402
from controlroom.engine.service import RunRequest, RunService  # noqa: E402
from controlroom.eventstore.arrow_log import arrow_reader  # noqa: E402
from controlroom.projections.analytics import BATCH, AnalyticsProjection  # noqa: E402
from controlroom.projections.analytics_sql import REPORTS  # noqa: E402

TASKS = [
    "Draft scene 4",
    "consistency check",
    "prose review",
    "foreshadowing audit",
    "validate scene",
    "canon update",
    "outline restructure",
]


def build(workspace: Path, events: int) -> Context:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    for task in TASKS:
        try:
            asyncio.run(service.execute(service.start(RunRequest(task, {}))))
        except Exception as exc:  # a recipe this workspace cannot run: skip it
            print(f"  (skipped '{task}': {exc})")
    Followers(ctx.store).catch_up()
    template = ctx.store.recorder.select_notifications(start=0, limit=100_000)
    day = template[0].state.decode().split('"timestamp":"')[1][:10].encode()
    pending: list[StoredEvent] = []
    copy = 0
    while ctx.store.max_position() + len(pending) < events:
        copy += 1
        new_day = f"2026-01-{1 + copy % 28:02d}".encode() if copy % 2 else day
        for note in template:
            old = str(note.originator_id)
            new = f"{old}_{copy}"
            state = note.state.replace(old.encode(), new.encode()).replace(day, new_day)
            state = _vary(state, copy)
            pending.append(StoredEvent(new, note.originator_version, note.topic, state))
        if len(pending) >= 20_000:
            ctx.store.recorder.insert_events(pending)
            pending = []
    if pending:
        ctx.store.recorder.insert_events(pending)
    return ctx


_PER_RUN = re.compile(rb"\b(rcpt|sess|tr)_([0-9a-f]{12,})|\"(latency_ms|duration_ms)\":([0-9.]+)")


def _vary(state: bytes, copy: int) -> bytes:
    """What differs between real runs of one recipe over one manuscript: their receipt,
    session and trace ids and how long their calls took. (Copies identical but for the run id
    would flatter the ingest: DuckDB stores a few hundred distinct payloads as a dictionary.)"""

    def vary(match: re.Match[bytes]) -> bytes:
        if match[1]:
            digest = hashlib.blake2b(match[2] + str(copy).encode(), digest_size=8).hexdigest()
            return match[1] + b"_" + digest.encode()
        jitter = 1 + ((copy * 7919 + len(match[4])) % 97) / 100
        return b'"' + match[3] + b'":' + f"{float(match[4]) * jitter:.3f}".encode()

    return _PER_RUN.sub(vary, state)


def drop_schema(spec: str) -> None:
    import psycopg

    from controlroom.eventstore.postgres import conninfo, postgres_env

    env = postgres_env(spec)
    with psycopg.connect(conninfo(env), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{env["POSTGRES_SCHEMA"]}" CASCADE')


def rate(count: int, seconds: float) -> str:
    return f"{count:,} events in {seconds:.2f}s = {count / seconds:,.0f} events/s"


def measure_reads(workspace: Path, batch_size: int) -> None:
    """The raw read rates of the log, the baselines of the ingest (a fresh process)."""
    ctx = Context.open(workspace)
    head = ctx.store.max_position()
    started, position, read = time.perf_counter(), 0, 0
    while True:
        notes = ctx.store.recorder.select_notifications(
            start=position, limit=batch_size, inclusive_of_start=False
        )
        read += len(notes)
        if len(notes) < batch_size:
            break
        position = notes[-1].id
    raw_s = time.perf_counter() - started
    print(f"raw read (select_notifications):  {rate(read, raw_s)}")

    started, position, read = time.perf_counter(), 0, 0
    while True:
        notes = ctx.store.recorder.select_notifications(
            start=position, limit=batch_size, inclusive_of_start=False
        )
        for note in notes:
            orjson.loads(note.state)
        read += len(notes)
        if len(notes) < batch_size:
            break
        position = notes[-1].id
    print(f"decoded read (+ orjson per event): {rate(read, time.perf_counter() - started)}")

    started, position, read = time.perf_counter(), 0, 0
    with arrow_reader(ctx.store) as read_arrow:
        while True:
            batch = read_arrow(position, head, batch_size)
            read += batch.num_rows
            if batch.num_rows < batch_size:
                break
            position = batch.column("position")[-1].as_py()
    arrow_s = time.perf_counter() - started
    print(f"raw read (Arrow, the ingest's):    {rate(read, arrow_s)}")
    print(f"RESULT {raw_s} {arrow_s}")
    ctx.close()


def measure_ingest(workspace: Path, batch_size: int) -> None:
    """A rebuild of analytics.duckdb, then every report over it (a fresh process, as
    `controlroom analytics rebuild` runs)."""
    ctx = Context.open(workspace)
    path = workspace / ".control-room" / "analytics.duckdb"
    with AnalyticsProjection(ctx.store, path) as analytics:
        started = time.perf_counter()
        loaded = analytics.rebuild(batch_size=batch_size)
        ingest_s = time.perf_counter() - started
        print(f"analytics rebuild (ingest):       {rate(loaded, ingest_s)}")
        print(f"RESULT {ingest_s}")
        size = path.stat().st_size / 1e6
        print(f"  analytics.duckdb: {size:,.0f} MB")
        for name in REPORTS:
            analytics.report(name)  # warm the file cache once
            started = time.perf_counter()
            result = analytics.report(name)
            took = (time.perf_counter() - started) * 1000
            print(f"  report {name:<14} {result.row_count:>5} rows {took:8.1f} ms")
        started = time.perf_counter()
        result = analytics.query(
            "SELECT recipe_id, step_id, quantile_cont(duration_ms, [0.5, 0.95]) AS p50_p95, "
            "count(*) FROM steps GROUP BY ALL"
        )
        took = (time.perf_counter() - started) * 1000
        print(f"  p50/p95 step duration by recipe and step: {took:.1f} ms")
        started = time.perf_counter()
        result = analytics.query("SELECT event_type, count(*) FROM events GROUP BY ALL")
        took = (time.perf_counter() - started) * 1000
        print(f"  events by type: {took:.1f} ms")
    ctx.close()


def in_fresh_process(part: str, workspace: Path, batch_size: int) -> list[float]:
    """Run one part in a process of its own; echo its lines, return its RESULT figures."""
    command = [sys.executable, __file__, "--part", part, "--workspace", str(workspace)]
    done = subprocess.run(
        [*command, "--batch", str(batch_size)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: list[float] = []
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            figures = [float(value) for value in line.split()[1:]]
        else:
            print(line, flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--part", choices=("reads", "ingest"), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--postgres",
        metavar="DSN",
        help="build the log in PostgreSQL (a schema of its own, dropped after) not SQLite",
    )
    ns = parser.parse_args()
    if ns.part:
        (measure_reads if ns.part == "reads" else measure_ingest)(ns.workspace, ns.batch)
        return
    folder = Path(tempfile.mkdtemp(prefix="cr-bench-analytics-"))
    if ns.postgres:  # every part, in this process and the children, uses this store
        separator = "&" if "?" in ns.postgres else "?"
        schema = f"bench_analytics_{uuid4().hex[:10]}"
        os.environ["CONTROLROOM_STORE"] = f"{ns.postgres}{separator}schema={schema}"
    try:
        workspace = folder / "novel"
        shutil.copytree(ROOT / "examples" / "novel", workspace)
        started = time.perf_counter()
        ctx = build(workspace, ns.events)
        head = ctx.store.max_position()
        took = time.perf_counter() - started
        print(f"log: {head:,} events in {ctx.store.location()}, built in {took:.1f}s")
        ctx.close()
        # The freshly written log is flushed before anything is timed: otherwise the kernel
        # writes a gigabyte back while the reads and the ingest below are measured. Each
        # part then runs in a process of its own, as the CLI's commands do: one that has
        # just built a million events, or read them all, is not what `analytics rebuild`
        # starts from (the ingest measured after the reads in one process was 10-25% slower).
        os.sync()
        raw_s, arrow_s = in_fresh_process("reads", workspace, ns.batch)
        (ingest_s,) = in_fresh_process("ingest", workspace, ns.batch)
        print(
            f"ingest / raw read: {raw_s / ingest_s:.2f} (select_notifications), "
            f"{arrow_s / ingest_s:.2f} (Arrow)"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if ns.postgres:
            drop_schema(os.environ["CONTROLROOM_STORE"])


if __name__ == "__main__":
    main()
