"""Workers share queued runs through the runs' own events: a run is advanced by one worker
at a time, a killed worker's runs are finished by another, every step recorded once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from controlroom.domain.run_events import RunClaimed, StepCompleted
from controlroom.engine.context import Context
from tests.bundled import RECIPES_DIR
from tests.test_cli_e2e import cli as run_cli

pytestmark = pytest.mark.e2e
CLI = str(Path(sys.executable).parent / "controlroom")
SLOW = {"CONTROLROOM_OFFLINE_LATENCY_MS": "150", "CONTROLROOM_LEASE_S": "3"}


def cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-w", str(workspace), env=SLOW)


def worker(workspace: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, "worker", "-w", str(workspace), "--poll", "0.2", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **SLOW},
    )


def statuses(workspace: Path) -> dict[str, str]:
    return {r["run_id"]: r["status"] for r in json.loads(cli(workspace, "runs", "--json").stdout)}


def claimed_by(workspace: Path, pid: int) -> bool:
    ctx = Context.open(workspace)
    try:
        owners = [p.event.owner for p in ctx.store.read_log() if isinstance(p.event, RunClaimed)]
    finally:
        ctx.close()
    return any(owner.endswith(f":{pid}") for owner in owners)


def wait_until(predicate: object, timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise AssertionError("timed out waiting")


@pytest.mark.timeout(240)
def test_queued_runs_are_shared_and_a_killed_workers_runs_are_finished_by_another(
    workspace: Path,
) -> None:
    # Four drafts of one scene would race for its file (the first to write it makes the
    # others fail before their first model call): each run writes a draft of its own.
    from bench.suite import drafts_apart

    overrides = workspace / ".control-room" / "recipes"
    overrides.mkdir(parents=True, exist_ok=True)
    shutil.copy(RECIPES_DIR / "creative_draft_scene.json", overrides)
    drafts_apart(workspace)

    def queue(n: int) -> dict[str, str]:
        args = ("Draft scene 4 from the outline", "--queue", "--json", "--arg", f"queued={n}")
        queued_run: dict[str, str] = json.loads(cli(workspace, "run", *args).stdout)
        return queued_run

    queued = [queue(n) for n in range(4)]
    assert {q["status"] for q in queued} == {"queued"}
    first = worker(workspace, "--concurrency", "2")
    second: subprocess.Popen[str] | None = None
    try:
        # Kill the first worker once it holds a run, mid-run.
        wait_until(lambda: claimed_by(workspace, first.pid))
        second = worker(workspace)
        first.send_signal(signal.SIGKILL)
        # Generous: the suite shares the machine's two cores with this test's two workers.
        wait_until(lambda: set(statuses(workspace).values()) == {"done"}, timeout=120.0)
    finally:
        for proc in (first, second):
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
    assert second is not None and second.returncode == 0

    ctx = Context.open(workspace)
    try:
        completions = Counter(
            (p.event.originator_id, p.event.instance_id)
            for p in ctx.store.read_log()
            if isinstance(p.event, StepCompleted)
        )
    finally:
        ctx.close()
    assert len(completions) == 4 * 11 and set(completions.values()) == {1}
    for q in queued:
        assert cli(workspace, "replay", q["run_id"], "--verify").returncode == 0


def test_a_worker_stopped_with_sigterm_releases_what_it_cannot_finish(workspace: Path) -> None:
    run_id = json.loads(
        cli(workspace, "run", "Draft scene 4 from the outline", "--queue", "--json").stdout
    )["run_id"]
    proc = worker(workspace, "--grace", "0")
    wait_until(lambda: claimed_by(workspace, proc.pid))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    if statuses(workspace)[run_id] == "running":  # released mid-run: another worker finishes
        assert "released" in err
        again = worker(workspace)
        wait_until(lambda: statuses(workspace)[run_id] == "done")
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=30)
    assert statuses(workspace)[run_id] == "done"


def test_a_queued_run_can_be_followed_while_a_worker_executes_it(workspace: Path) -> None:
    proc = worker(workspace)
    try:
        followed = cli(workspace, "run", "Draft scene 4 from the outline", "--queue", "--follow")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert followed.returncode == 0, followed.stderr
    assert (
        "[11/11] phase B · write_scene (write_file)" in followed.stderr
        and "done" in followed.stdout
    )


def test_a_queued_run_says_so_and_its_hint_follows_it_to_the_end(workspace: Path) -> None:
    queued = cli(workspace, "run", "Draft scene 4 from the outline", "--queue")
    assert queued.returncode == 0, queued.stderr
    run_id = queued.stdout.split(":")[0].strip()
    hint = f"`controlroom show {run_id} --follow`"
    assert hint in queued.stderr
    listed = cli(workspace, "runs").stdout
    assert "(queued: no process holds it; a worker takes it (`controlroom worker`)" in listed
    proc = worker(workspace)
    try:
        followed = cli(workspace, *hint.strip("`").split()[1:])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert followed.returncode == 0, followed.stderr
    assert "[11/11] phase B · write_scene (write_file)" in followed.stderr
    assert run_id in followed.stdout and "done" in followed.stdout
    missing = cli(workspace, "show", "run_0000000000000000", "--follow")
    assert missing.returncode != 0 and "run_0000000000000000" in missing.stderr
