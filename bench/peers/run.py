"""Peers: the same workflow of 8 trivial durable steps on Control Room and its peers.

    .venv/bin/python bench/peers/run.py [--rounds 5] [--seconds 4] [--venvs DIR]
        [--postgres DSN] [--markdown FILE]

Each peer runs one workflow of 8 steps, each step doing trivial work (a small dict) and
each step's result made durable by the peer's own mechanism, again and again for
`--seconds` after 20 untimed runs; the figure is wall and CPU time per step:

- Control Room: the `trivial_steps` recipe (8 `noop` tool steps) as `bench/suite.py` runs
  it (`workload_controlroom.py`, importing the suite), on SQLite and PostgreSQL;
- raw `eventsourcing`: one small event saved per step, as the suite's raw save;
- LangGraph: a `StateGraph` of 8 nodes with the `SqliteSaver` checkpointer, at its default
  durability (`async`) and at `sync` (`workload_langgraph.py`);
- DBOS: a `@DBOS.workflow` calling 8 `@DBOS.step`s, its system database a SQLite file or a
  scratch PostgreSQL database created for the run and dropped after (`workload_dbos.py`).

Every SQLite database is a new file in a temporary folder, left at its peer's defaults.
LangGraph and DBOS are installed, at the versions pinned below, into venvs of their own
under `--venvs` (default `~/.cache/controlroom-peers/`), created on first use and reused
while their pins hold; nothing is installed into the project's venv, whose Python runs
Control Room and raw `eventsourcing`. Every run is a subprocess of its venv's Python. Rounds
run every peer once, in an order rotated each round, so the machine's noise hits all alike;
the table gives medians over rounds, and each peer's ratio to Control Room and to the raw
save on the same store. PostgreSQL rows are skipped when the server is unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DSN: Final = "postgresql://postgres@127.0.0.1:5432/test"
#: venv name -> exact pins (what the table's figures were measured with)
PINS: Final = {
    "langgraph": ["langgraph==1.2.22", "langgraph-checkpoint-sqlite==3.1.2"],
    "dbos": ["dbos==3.4.0"],
}
#: distributions whose versions each venv reports ("project": the project's own venv)
REPORTED: Final = {
    "project": ["eventsourcing", "psycopg"],
    "langgraph": [
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "langchain-core",
        "ormsgpack",
    ],
    "dbos": ["dbos", "sqlalchemy", "psycopg"],
}
STEPS: Final = 8
Command = Callable[[Path], list[str]]  # a scratch folder -> the workload's command


@dataclass(frozen=True)
class Peer:
    name: str
    store: str
    venv: str  # "project" or a key of PINS
    command: Command
    postgres_database: bool = False  # wants a scratch database of its own (--url)


@dataclass
class Figures:
    wall: list[float] = field(default_factory=list)  # seconds per step, one a round
    cpu: list[float] = field(default_factory=list)
    rows: list[float] = field(default_factory=list)  # rows stored per step
    rows_what: str = ""


def python_of(venvs: Path, venv: str) -> str:
    return sys.executable if venv == "project" else str(venvs / venv / "bin" / "python")


def peers(venvs: Path, dsn: str | None, seconds: float) -> list[Peer]:
    timed = ["--seconds", str(seconds)]
    ours = [sys.executable, str(HERE / "workload_controlroom.py"), *timed]
    graph = [python_of(venvs, "langgraph"), str(HERE / "workload_langgraph.py"), *timed]
    dbos = [python_of(venvs, "dbos"), str(HERE / "workload_dbos.py"), *timed]

    def langgraph(durability: str) -> Command:
        return lambda tmp: [*graph, "--db", str(tmp / "lg.sqlite"), "--durability", durability]

    found = [
        Peer("Control Room", "sqlite", "project", lambda _: [*ours, "controlroom"]),
        Peer("raw eventsourcing", "sqlite", "project", lambda _: [*ours, "raw"]),
        Peer("LangGraph (default durability: async)", "sqlite", "langgraph", langgraph("async")),
        Peer("LangGraph (durability: sync)", "sqlite", "langgraph", langgraph("sync")),
        Peer(
            "DBOS", "sqlite", "dbos", lambda tmp: [*dbos, "--url", f"sqlite:///{tmp}/dbos.sqlite"]
        ),
    ]
    if dsn:
        pg = ["--postgres", dsn]
        found += [
            Peer("Control Room", "postgres", "project", lambda _: [*ours, "controlroom", *pg]),
            Peer("raw eventsourcing", "postgres", "project", lambda _: [*ours, "raw", *pg]),
            Peer("DBOS", "postgres", "dbos", lambda _: dbos, postgres_database=True),
        ]
    return found


def ensure_venv(venvs: Path, name: str) -> None:
    """Create the peer's venv with its pins, unless it has them already."""
    path = (venvs / name).resolve()
    if path.is_relative_to(REPO / ".venv") or path == Path(sys.prefix).resolve():
        raise SystemExit(f"refusing to install peers into the project's venv: {path}")
    marker = path / "peers-pins.txt"
    wanted = "\n".join(PINS[name]) + "\n"
    if marker.exists() and marker.read_text() == wanted:
        return
    print(f"installing {' '.join(PINS[name])} into {path}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", *PINS[name]]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"pip failed for {name}:\n{done.stdout}{done.stderr}")
    marker.write_text(wanted)


VERSIONS_SCRIPT: Final = """
import importlib.metadata as m, json, platform, sqlite3, sys
print(json.dumps({**{d: m.version(d) for d in sys.argv[1:]},
                  "python": platform.python_version(), "sqlite": sqlite3.sqlite_version}))
"""


def versions(venvs: Path, venv: str) -> dict[str, str]:
    command = [python_of(venvs, venv), "-c", VERSIONS_SCRIPT, *REPORTED[venv]]
    found: dict[str, str] = json.loads(subprocess.check_output(command, text=True))
    return found


def project_commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout

    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return commit + (" (with uncommitted changes)" if git("status", "--porcelain").strip() else "")


def postgres_version(dsn: str) -> str | None:
    """The server's version, None when it cannot be reached."""
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return str(row[0]) if row else "?"
    except Exception:
        return None


@contextmanager
def scratch_database(dsn: str) -> Iterator[str]:
    """A new database on the server of `dsn`, dropped after: its URL."""
    import psycopg

    name = f"peers_{uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_once(peer: Peer, dsn: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        command = peer.command(Path(tmp))

        def run(command: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(command, capture_output=True, text=True, cwd=tmp, timeout=600)

        if peer.postgres_database:
            assert dsn is not None
            with scratch_database(dsn) as url:
                done = run([*command, "--url", url])
        else:
            done = run(command)
    if done.returncode:
        raise SystemExit(f"{peer.name} ({peer.store}) failed:\n{done.stdout}{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["steps"] > 0 and figures["steps"] == figures["runs"] * STEPS, figures
    return figures


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0, help="timed part of each run")
    parser.add_argument(
        "--venvs",
        type=Path,
        default=Path.home() / ".cache" / "controlroom-peers",
        help="where the peers' venvs live",
    )
    parser.add_argument("--postgres", default=DSN, help="base DSN ('' to skip PostgreSQL)")
    parser.add_argument("--markdown", help="also write the table to this Markdown file")
    ns = parser.parse_args()
    for name in PINS:
        ensure_venv(ns.venvs, name)
    server = postgres_version(ns.postgres) if ns.postgres else None
    dsn = ns.postgres if server else None
    if ns.postgres and not server:
        print(f"PostgreSQL unreachable at {ns.postgres}: its rows are skipped", flush=True)
    found = {venv: versions(ns.venvs, venv) for venv in REPORTED}
    load_start, started = load(), time.perf_counter()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"load average at start: {load_start}", flush=True)
    line = peers(ns.venvs, dsn, ns.seconds)
    figures = {(p.name, p.store): Figures() for p in line}
    shift = max(1, len(line) // ns.rounds)
    for round_ in range(ns.rounds):
        at = round_ * shift % len(line)
        for peer in line[at:] + line[:at]:
            got = run_once(peer, dsn)
            mine = figures[(peer.name, peer.store)]
            mine.wall.append(got["wall_s"] / got["steps"])
            mine.cpu.append(got["cpu_s"] / got["steps"])
            mine.rows.append(got["rows"] / got["all_steps"])
            mine.rows_what = f"{got['rows_what']} over {got['all_steps']} steps"
            print(
                f"round {round_ + 1}: {peer.name} ({peer.store}): {got['runs']} runs, "
                f"{mine.wall[-1] * 1000:.2f} ms/step, CPU {mine.cpu[-1] * 1000:.2f} ms/step; "
                f"{mine.rows_what}",
                flush=True,
            )
    load_end, took = load(), time.perf_counter() - started
    median = statistics.median
    header = [
        "| peer | store | ms per step: median (rounds) | CPU ms per step "
        "| rows per step | × Control Room: wall, CPU | × raw save: wall, CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for (name, store), mine in figures.items():
        ours, raw = figures[("Control Room", store)], figures[("raw eventsourcing", store)]
        wall, cpu = median(mine.wall), median(mine.cpu)
        rounds = ", ".join(f"{w * 1000:.2f}" for w in mine.wall)
        rows.append(
            f"| {name} | {store} | **{wall * 1000:.2f}** ({rounds}) | {cpu * 1000:.2f} "
            f"| {median(mine.rows):.2f} "
            f"| **{wall / median(ours.wall):.2f}x**, {cpu / median(ours.cpu):.2f}x "
            f"| {wall / median(raw.wall):.2f}x, {cpu / median(raw.cpu):.2f}x |"
        )
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    notes = [
        f"Measured {stamp} on {machine}, {ns.rounds} rounds of {ns.seconds:g} s a peer, "
        f"{took:.0f} s in all; load average {load_start} at the start, {load_end} at the end.",
        f"Control Room at {project_commit()}; PostgreSQL {server or 'not reached'}.",
        *(
            f"- {venv}: " + ", ".join(f"{k} {v}" for k, v in found[venv].items())
            for venv in REPORTED
        ),
    ]
    print()
    print("\n".join([*header, *rows, "", *notes]))
    if ns.markdown:
        Path(ns.markdown).write_text("\n".join([*notes, "", *header, *rows, ""]))
        print(f"written to {ns.markdown}")


if __name__ == "__main__":
    main()
