"""Hostile input at the edge is refused naming the field, before anything is recorded; a
poison event already in a store (an older release let it in) stops nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from eventsourcing.persistence import StoredEvent

from controlroom.engine.context import Context
from tests.live import live_server, read_sse
from tests.test_cli_e2e import as_json, cli

JSON = {"content-type": "application/json"}

pytestmark = pytest.mark.e2e


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def count_events(workspace: Path) -> int:
    ctx = Context.open(workspace)
    try:
        return ctx.store.max_position()
    finally:
        ctx.close()


def plant_poison(workspace: Path, run_id: str) -> None:
    """What an older release could store: a run's next event nested past what reads back."""
    ctx = Context.open(workspace)
    try:
        last = ctx.store.recorder.select_events(run_id, desc=True, limit=1)[0]
        version = last.originator_version + 1
        envelope = json.loads(last.state)
        state = (
            f'{{"originator_id":"{run_id}","originator_version":{version},'
            f'"timestamp":"{envelope["timestamp"]}","prev_hash":"{envelope["event_hash"]}",'
            f'"event_hash":"","step_index":0,"note":{deep_text(400)}}}'
        ).encode()
        ctx.store.recorder.insert_events([StoredEvent(run_id, version, "RunResumed", state)])
    finally:
        ctx.close()


def test_deeply_nested_args_are_refused_over_http_naming_the_field(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        for depth in (40, 200, 251, 1000):
            body = '{"recipe_id": "structural_canon", "args": {"deep": ' + deep_text(depth) + "}}"
            response = client.post("/api/runs", content=body.encode(), headers=JSON)
            assert response.status_code == 400, (depth, response.text)
            error = response.json()["error"]
            assert error["field"].startswith("args.deep"), error
        deep_json = b'{"recipe_id": "structural_canon", "args": ' + b"[" * 5000 + b"]" * 5000 + b"}"
        response = client.post("/api/runs", content=deep_json, headers=JSON)
        assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_json"
        for body in (
            {"recipe_id": "structural_canon", "args": {"n": 2**70}},
            {"recipe_id": "structural_canon", "args": {"s": "a\u0000b"}},
            {"recipe_id": "structural_canon", "args": {"s": "x" * 100_001}},
            {"recipe_id": "structural_canon", "session_id": "s\u0000"},
            {"recipe_id": "x" * 201},
        ):
            response = client.post("/api/runs", json=body)
            assert response.status_code == 400, (body, response.text)
            assert response.json()["error"].get("field"), response.text
        assert client.get("/api/runs").json() == []
    assert count_events(workspace) == 0


BAD_POSITIONS = ["9223372036854775808", "١٢", "²", "9" * 4300, "-1", "1e3", "0x10"]


def test_positions_outside_a_signed_64_bit_integer_or_not_ascii_are_refused(
    workspace: Path,
) -> None:
    ws = str(workspace)
    run_id = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        for raw in BAD_POSITIONS:
            for url in (f"/api/runs/{run_id}/events", "/api/events"):
                response = client.get(url, params={"after": raw})
                assert response.status_code == 400, (url, raw, response.text)
                assert response.json()["error"]["field"] == "after"
            if raw.isascii():
                response = client.get("/api/events", headers={"Last-Event-ID": raw})
                assert response.status_code == 400, response.text
                assert response.json()["error"]["field"] == "Last-Event-ID"
            response = client.get(f"/api/runs/{run_id}/audit", params={"at": raw})
            assert response.status_code == 400 and response.json()["error"]["field"] == "at"
        # The largest position is accepted: a feed after the end of a finished run is empty.
        assert read_sse(client, f"/api/runs/{run_id}/events?after={2**63 - 1}") == []


def test_the_cli_refuses_a_nested_arg_with_exit_64_and_records_nothing(workspace: Path) -> None:
    ws = str(workspace)
    for depth in (40, 251, 2000):
        value = deep_text(depth)
        result = cli("run", "structural_canon", "-w", ws, "-q", "--arg", f"deep={value}")
        if depth == 2000:  # not JSON to orjson (past 1024 levels): kept as plain text
            assert result.returncode == 0, result.stderr
            continue
        assert result.returncode == 64, result.stderr
        assert "--arg.deep" in result.stderr and "nested deeper than 32" in result.stderr
        assert "Traceback" not in result.stderr
    result = cli("run", "structural_canon", "-w", ws, "-q", "--description", "a\u0001" * 60_000)
    assert result.returncode == 64 and "--description" in result.stderr
    assert cli("show", "r" * 300, "-w", ws).returncode == 64


def test_a_poison_event_from_an_older_release_stops_no_other_run_or_reader(
    workspace: Path,
) -> None:
    ws = str(workspace)
    poisoned = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]
    plant_poison(workspace, poisoned)
    healthy = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]

    runs = cli("runs", "-w", ws, "--json")
    assert runs.returncode == 0, runs.stderr
    assert {r["run_id"] for r in as_json(runs)} == {poisoned, healthy}
    for args in (["show", healthy], ["issues"], ["projections", "rebuild"], ["resume"]):
        result = cli(*args, "-w", ws)
        assert result.returncode in (0, 1), (args, result.stderr)
        assert "Traceback" not in result.stderr, (args, result.stderr)
    events = cli("events", poisoned, "-w", ws)
    assert events.returncode == 0 and "DAMAGED (RunResumed)" in events.stdout, events.stderr
    cancelled = cli("cancel", poisoned, "-w", ws)
    assert cancelled.returncode == 1 and "Traceback" not in cancelled.stderr, cancelled.stderr
    verify = cli("replay", poisoned, "--verify", "-w", ws)
    assert verify.returncode == 1 and "unreadable" in verify.stderr
    assert "Traceback" not in verify.stderr

    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/api/runs").status_code == 200
        assert client.get(f"/api/runs/{healthy}/audit").status_code == 200
        assert client.get(f"/api/runs/{poisoned}/audit").status_code == 422
        assert client.post(f"/api/runs/{poisoned}/cancel").status_code == 422
        # The live reader passes the poison and keeps serving: a run started now arrives.
        started = client.post("/api/runs", json={"recipe_id": "structural_canon"}).json()
        feed = read_sse(client, f"/api/runs/{started['run_id']}/events")
        assert feed[-1]["event"] == "RunCompleted"
        everything = read_sse(client, "/api/events?after=0", limit=45)
        assert {m["data"]["run_id"] for m in everything} >= {healthy}


def test_an_over_long_path_fails_the_tool_step_cleanly_and_resume_goes_on(
    workspace: Path,
) -> None:
    ws = str(workspace)
    long_name = "a" * 300 + ".md"
    for arg in (f"path={long_name}", f'paths=["scenes/{long_name}"]'):
        result = cli("run", "analytical_prose", "-w", ws, "-q", "--arg", arg)
        assert result.returncode == 1, result.stderr
        assert "is too long" in result.stdout and "Traceback" not in result.stderr
    nul = cli("run", "analytical_prose", "-w", ws, "-q", "--arg", 'path="scenes/a\\u0000b.md"')
    assert nul.returncode == 64 and "NUL" in nul.stderr, nul.stderr
    assert {r["status"] for r in as_json(cli("runs", "-w", ws, "--json"))} == {"failed"}
    resumed = cli("resume", "-w", ws)
    assert resumed.returncode == 0 and "nothing to resume" in resumed.stderr


def test_the_workspace_refuses_nul_and_over_long_paths_by_name(workspace: Path) -> None:
    from controlroom.domain.errors import WorkspaceError
    from controlroom.tools.workspace import Workspace

    files = Workspace(workspace)
    for path in ("a" * 300, "x\x00y", "scenes/" + "b/" * 2100 + "c.md"):
        with pytest.raises(WorkspaceError):
            files.read_text(path)
        with pytest.raises(WorkspaceError):
            files.exists(path)


@pytest.mark.parametrize(
    "args",
    [
        ["--concurrency", "0"],
        ["--concurrency", "١"],
        ["--concurrency", "9" * 4300],
        ["--poll", "nan"],
        ["--grace", "inf"],
        ["--poll", "-1"],
    ],
)
def test_worker_numbers_outside_their_range_are_refused_with_64(
    workspace: Path, args: list[str]
) -> None:
    result = cli("worker", "-w", str(workspace), *args)
    assert result.returncode == 64 and args[0] in result.stderr, result.stderr


def test_a_store_from_before_the_limits_with_deep_args_reads_back_and_verifies(
    workspace: Path,
) -> None:
    """Pydantic's JSON reader stops at 200 levels; such events (written before the edge
    limits, under them only through the engine) read back the slower way, whole."""
    import asyncio

    from controlroom.engine.service import RunRequest, RunService

    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        deep = json.loads(deep_text(210))
        run = asyncio.run(
            service.execute(service.start(RunRequest("structural_canon", {"deep": deep})))
        )
    finally:
        ctx.close()
    ws = str(workspace)
    verified = cli("replay", run.id, "--verify", "-w", ws)
    assert verified.returncode == 0 and "hash chain intact" in verified.stderr, verified.stderr
    events = cli("events", run.id, "-w", ws, "--json")
    assert events.returncode == 0 and "damaged" not in events.stdout
    assert as_json(cli("show", run.id, "-w", ws, "--json"))["status"] == "done"
