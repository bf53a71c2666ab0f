"""Audit replay from events alone, tamper detection, rebuilt projections, export."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.port import ModelRequest, ModelResponse
from controlroom.projections.audit import export_run, replay, verify
from controlroom.projections.views import Views
from controlroom.tools.base import ToolArgs, ToolRegistry

CLI = str(Path(sys.executable).parent / "controlroom")


class Untouchable:
    """A port that fails the test if anything calls it."""

    provider = "offline"

    def now(self) -> datetime:
        raise AssertionError("replay read the clock")

    def new(self, prefix: str) -> str:
        raise AssertionError("replay made an id")

    async def complete(self, request: ModelRequest, on_text: Any = None) -> ModelResponse:
        raise AssertionError("replay called a model")


def untouchable_tool(tool_name: str) -> Any:
    def run(self: Any, args: Any, workspace: Any) -> Any:
        raise AssertionError(f"replay ran the tool {tool_name}")

    return type(
        "UntouchableTool",
        (),
        {"name": tool_name, "description": "", "args_model": ToolArgs, "run": run},
    )()


def finished_run(workspace: Path, task: str = "Draft scene 4") -> str:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest(task, {}))))
    Followers(ctx.store).catch_up()  # the DoD-issue policy reacts, as any command's would
    ctx.close()
    return run.id


def test_replay_calls_no_tool_model_or_clock(workspace: Path) -> None:
    run_id = finished_run(workspace)
    guard = Untouchable()
    tools = ToolRegistry([untouchable_tool(name) for name in ToolRegistry.default().names()])
    ctx = Context.open(
        workspace,
        agents=AgentDirectory(clients={"offline": guard}),
        tools=tools,
        clock=guard,
        ids=guard,
    )
    view = replay(ctx.store, run_id)
    assert view.run["status"] == "done" and len(view.steps) == 11
    assert replay(ctx.store, run_id, at_version=3).run["status"] == "running"
    assert verify(ctx.store, run_id) == []


def _stored(workspace: Path) -> sqlite3.Connection:
    return sqlite3.connect(workspace / ".control-room" / "events.sqlite")


def _run_rows(conn: sqlite3.Connection, run_id: str) -> list[tuple[int, bytes]]:
    return conn.execute(
        "SELECT originator_version, state FROM stored_events "
        "WHERE originator_id = ? ORDER BY originator_version",
        (run_id,),
    ).fetchall()


def _replay_verify(workspace: Path, run_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "replay", run_id, "--verify", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_verify_passes_an_untouched_store(workspace: Path) -> None:
    run_id = finished_run(workspace)
    result = _replay_verify(workspace, run_id)
    assert result.returncode == 0 and "hash chain intact" in result.stderr
    assert json.loads(result.stdout)["status"] == "done"


def test_verify_names_a_changed_event(workspace: Path) -> None:
    run_id = finished_run(workspace)
    with closing(_stored(workspace)) as conn:
        version, state = _run_rows(conn, run_id)[5]
        forged = state.replace(b'"timestamp":"2026', b'"timestamp":"2025')
        assert forged != state
        conn.execute(
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
            (forged, run_id, version),
        )
        conn.commit()
    result = _replay_verify(workspace, run_id)
    assert result.returncode == 1
    assert f"v{version} (changed)" in result.stderr


def test_verify_names_a_missing_event(workspace: Path) -> None:
    run_id = finished_run(workspace)
    with closing(_stored(workspace)) as conn:
        conn.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 7",
            (run_id,),
        )
        conn.commit()
    result = _replay_verify(workspace, run_id)
    assert result.returncode == 1 and "v7 (missing)" in result.stderr


def test_verify_names_reordered_events(workspace: Path) -> None:
    run_id = finished_run(workspace)
    with closing(_stored(workspace)) as conn:
        rows = dict(_run_rows(conn, run_id))
        for version, other in ((4, 5), (5, 4)):
            conn.execute(
                "UPDATE stored_events SET state = ? WHERE originator_id = ? AND "
                "originator_version = ?",
                (rows[other], run_id, version),
            )
        conn.commit()
    result = _replay_verify(workspace, run_id)
    assert result.returncode == 1
    assert "v4 (" in result.stderr  # the first event out of place is named


def test_rebuilt_projections_equal_the_live_ones(workspace: Path) -> None:
    finished_run(workspace)
    finished_run(workspace, "check consistency of the scenes")
    ctx = Context.open(workspace)
    views = Views.for_store(ctx.store)
    views.catch_up()
    finished_run(workspace, "foreshadowing audit")
    views.catch_up(batch_size=7)  # incremental catch-up in small batches
    live = views.dump()
    assert len(live["runs"]) == 3 and len(live["issues"]) == 1
    head = ctx.store.max_position()
    assert views.rebuild() > head  # the runs read every event, the issues their own
    assert views.dump() == live
    assert [(s.position, s.lag) for s in views.status()] == [(head, 0)] * len(views.names())
    result = subprocess.run(
        [CLI, "projections", "rebuild", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert f"rebuilt runs from {head} events (position {head})" in result.stdout
    # The issues read their own events and the runs' audit trail (receipts, packets).
    assert re.search(r"rebuilt issues from \d+ events", result.stdout)
    assert views.dump() == live


def test_catching_up_twice_applies_each_event_once(workspace: Path) -> None:
    finished_run(workspace)
    ctx = Context.open(workspace)
    first, second = Views.for_store(ctx.store), Views.for_store(ctx.store)
    assert first.catch_up() >= ctx.store.max_position()  # the runs read every event
    assert second.catch_up() == 0  # same file: the position was already advanced


def test_export_writes_the_seed_file_layout(workspace: Path, tmp_path: Path) -> None:
    run_id = finished_run(workspace)
    ctx = Context.open(workspace)
    written = export_run(replay(ctx.store, run_id), tmp_path / "out")
    assert [p.name for p in written] == ["run.json", "steps.jsonl", "cache.json"]
    manifest: dict[str, Any] = json.loads((tmp_path / "out" / "run.json").read_text())
    assert manifest["run_id"] == run_id and manifest["status"] == "done"
    steps = [
        json.loads(line) for line in (tmp_path / "out" / "steps.jsonl").read_text().splitlines()
    ]
    assert [s["step_index"] for s in steps] == list(range(11))
    assert steps[0]["receipt_id"].startswith("rcpt_") and steps[3]["receipt_id"] is None
    cache = json.loads((tmp_path / "out" / "cache.json").read_text())
    assert cache["discovery"]["type"] == "pointer" and cache["draft"]["type"] == "artifact"


def test_serve_refuses_the_network_without_a_token(workspace: Path) -> None:
    result = subprocess.run(
        [CLI, "serve", "--host", "0.0.0.0", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 64 and "CONTROLROOM_API_TOKEN" in result.stderr


@pytest.mark.parametrize("at", ["1", "5"])
def test_replay_at_a_version_from_the_cli(workspace: Path, at: str) -> None:
    run_id = finished_run(workspace)
    result = subprocess.run(
        [CLI, "replay", run_id, "--at", at, "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and json.loads(result.stdout)["version"] == int(at)
