"""The main job, a DoD issue, queued runs and two workers: end to end on PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from controlroom.domain.run_events import StepCompleted
from controlroom.engine.context import Context
from controlroom.engine.settings import Settings
from tests.postgres import postgres_store_spec

__all__ = ["postgres_store_spec"]  # a fixture, used by name
pytestmark = pytest.mark.e2e
CLI = str(Path(sys.executable).parent / "controlroom")


def test_runs_issues_and_workers_on_postgresql(workspace: Path, postgres_store_spec: str) -> None:
    env = {
        **os.environ,
        "CONTROLROOM_STORE": postgres_store_spec,
        "CONTROLROOM_OFFLINE_LATENCY_MS": "50",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args, "-w", str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )

    assert cli("run", "Draft scene 4 from the outline", "-q").returncode == 0
    failed = cli("run", "check consistency of the scenes", "-q")
    assert failed.returncode == 1 and "Kael's eyes" in failed.stdout
    # Queued for the workers: three prose reviews (scene 4 is written now, and a scene
    # already written is never drafted again).
    for _ in range(3):
        assert cli("run", "prose review", "--queue").returncode == 0
    workers = [
        subprocess.Popen(
            [CLI, "worker", "-w", str(workspace), "--poll", "0.2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            runs = json.loads(cli("runs", "--json").stdout)
            if len(runs) == 5 and all(r["status"] != "running" for r in runs):
                break
            time.sleep(0.3)
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
    assert sorted(r["status"] for r in runs) == ["done"] * 4 + ["failed"]
    assert len(json.loads(cli("issues", "--json").stdout)) == 1
    ctx = Context.open(workspace, settings=Settings.from_env(env))
    try:
        steps = Counter(
            (p.event.originator_id, p.event.instance_id)
            for p in ctx.store.read_log()
            if isinstance(p.event, StepCompleted)
        )
    finally:
        ctx.close()
    # The draft's 11 steps, 3 prose reviews of 7, the failing consistency check's 8.
    assert set(steps.values()) == {1} and len(steps) == 11 + 3 * 7 + 8
    for run in runs:
        assert cli("replay", run["run_id"], "--verify").returncode == 0
    # The read models live in the database beside the log, not in a file of this machine.
    assert not list((workspace / ".control-room").glob("views*.sqlite"))


def test_a_server_that_does_not_execute_streams_a_run_a_worker_executes(
    workspace: Path, postgres_store_spec: str
) -> None:
    import httpx

    from controlroom.api.app import create_app
    from tests.live import read_sse, serve_app

    env = {**os.environ, "CONTROLROOM_STORE": postgres_store_spec}
    ctx = Context.open(workspace, settings=Settings.from_env(env))
    proc = subprocess.Popen(
        [CLI, "worker", "-w", str(workspace), "--poll", "0.2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        with (
            serve_app(create_app(ctx, execute=False)) as base,
            httpx.Client(base_url=base, timeout=30) as client,
        ):
            started = client.post("/api/runs", json={"task": "Draft scene 4 from the outline"})
            assert started.status_code == 201 and started.json()["status"] == "queued"
            run_id = started.json()["run_id"]
            feed = read_sse(client, f"/api/runs/{run_id}/events")
            stored = [m for m in feed if m["event"] != "partial"]
            assert stored[0]["event"] == "RunStarted" and stored[-1]["event"] == "RunCompleted"
            claims = [m["data"]["data"]["owner"] for m in stored if m["event"] == "RunClaimed"]
            assert claims and all(owner.endswith(f":{proc.pid}") for owner in claims)
            positions = [int(m["id"]) for m in stored]
            assert positions == sorted(set(positions))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        ctx.close()


def test_a_plan_runs_on_postgresql_with_its_runs_left_to_a_worker(
    workspace: Path, postgres_store_spec: str
) -> None:
    env = {**os.environ, "CONTROLROOM_STORE": postgres_store_spec}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args, "-w", str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )

    intent = "Validate scene 3 against the outline, then check consistency of scene 3"
    plan_id = json.loads(cli("plan", "create", intent, "--json").stdout)["plan_id"]
    assert cli("plan", "approve", plan_id).returncode == 0
    assert cli("plan", "start", plan_id, "--queue").returncode == 0  # the policies queue runs
    worker = subprocess.Popen(
        [CLI, "worker", "-w", str(workspace), "--poll", "0.2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            shown = cli("plan", "show", plan_id, "--json")
            if shown.returncode == 74:  # the store was busy (documented: try again)
                time.sleep(0.3)
                continue
            assert shown.returncode == 0, shown.stderr
            plan = json.loads(shown.stdout)
            if plan["status"] in ("done", "failed"):
                break
            time.sleep(0.3)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
    assert plan["status"] == "done", [
        (t["task_id"], t["state"], t["run_id"], t["run_status"]) for t in plan["tasks"]
    ]
    assert [t["state"] for t in plan["tasks"]] == ["done", "done"]


def test_processes_opening_a_new_store_at_the_same_instant_all_succeed(
    workspace: Path, postgres_store_spec: str
) -> None:
    # PostgreSQL's CREATE ... IF NOT EXISTS statements race each other ("tuple concurrently
    # updated"): a worker and a CLI command starting together once killed the worker.
    env = {**os.environ, "CONTROLROOM_STORE": postgres_store_spec}
    procs = [
        subprocess.Popen(
            [CLI, "runs", "--json", "-w", str(workspace)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
    for proc in procs:
        if proc.stderr:
            proc.stderr.close()
    assert all(code == 0 for code, _ in results), results
