"""Named projections: exactly once, rebuildable by name, damage kept to one run, step
instances, artifact text stored once, and the typed read side the CLI and HTTP share."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventsourcing.persistence import Notification

from controlroom.api.openapi import openapi_document
from controlroom.domain.errors import RunNotFoundError
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.base import Recorded
from controlroom.projections.db import SQLiteDb
from controlroom.projections.models import RunDetail
from controlroom.projections.run_view import RunView
from controlroom.projections.runs import RunsProjection
from controlroom.projections.views import Views
from tests.analytics_contract import undrafted
from tests.conftest import APPENDIX_D_KEYS, FIXTURES
from tests.test_cli_e2e import cli as run_cli
from tests.test_cli_e2e import start_slow_run

CLI = str(Path(sys.executable).parent / "controlroom")
AT = "2026-11-23T12:00:00Z"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def record_runs(workspace: Path, *tasks: str) -> list[str]:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run_ids = [
        asyncio.run(service.execute(service.start(undrafted(workspace, task)))).id for task in tasks
    ]
    Followers(ctx.store).catch_up()
    ctx.close()
    return run_ids


def delete_event(workspace: Path, run_id: str, version: int) -> None:
    with closing(sqlite3.connect(workspace / ".control-room" / "events.sqlite")) as conn:
        conn.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = ?",
            (run_id, version),
        )
        conn.commit()


@pytest.mark.e2e
def test_a_run_missing_an_event_is_damaged_while_every_other_run_lists_shows_and_replays(
    workspace: Path,
) -> None:
    ws = str(workspace)
    first, broken, last = record_runs(workspace, "Draft scene 4", "prose review", "Draft scene 4")
    delete_event(workspace, broken, 3)

    assert cli("projections", "rebuild", "-w", ws).returncode == 0
    runs = json.loads(cli("runs", "-w", ws, "--json").stdout)
    assert [r["run_id"] for r in runs] == [first, broken, last]
    damaged = runs[1]
    assert damaged["status"] == "damaged"
    assert damaged["damage"] == "event v3 is missing (found event v4)"
    assert {r["status"] for r in (runs[0], runs[2])} == {"done"} and "damage" not in runs[0]
    listed = cli("runs", "-w", ws)
    assert listed.returncode == 0 and "event v3 is missing" in listed.stdout
    assert [
        r["run_id"]
        for r in json.loads(cli("runs", "--status", "damaged", "-w", ws, "--json").stdout)
    ] == [broken]

    shown = cli("show", broken, "-w", ws)
    assert shown.returncode == 0 and "damaged: event v3 is missing" in shown.stdout
    for run_id in (first, last):
        view = json.loads(cli("show", run_id, "-w", ws, "--json").stdout)
        assert view["status"] == "done" and set(view) >= APPENDIX_D_KEYS
        replayed = cli("replay", run_id, "--verify", "-w", ws)
        assert replayed.returncode == 0 and json.loads(replayed.stdout) == view
    assert cli("replay", broken, "--verify", "-w", ws).returncode == 1  # named by verify
    assert cli("events", broken, "-w", ws, "--json").returncode == 0


@pytest.mark.e2e
def test_a_run_whose_process_was_killed_says_it_is_not_advancing(workspace: Path) -> None:
    process = start_slow_run(workspace, "-q")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    (run,) = json.loads(cli("runs", "-w", str(workspace), "--json").stdout)
    assert run["status"] == "running" and run["owner"].endswith(f":{process.pid}")
    listed = cli("runs", "-w", str(workspace)).stdout
    assert f"(not advancing: its process {run['owner']} is gone; a worker takes it" in listed
    shown = cli("show", run["run_id"], "-w", str(workspace)).stdout
    assert f"continue it here with `controlroom resume {run['run_id']}`" in shown


def test_a_run_missing_its_first_event_is_listed_as_damaged(workspace: Path) -> None:
    (broken,) = record_runs(workspace, "prose review")
    delete_event(workspace, broken, 1)
    ctx = Context.open(workspace)
    with closing(Views.for_store(ctx.store)) as views:
        views.rebuild()
        (summary,) = views.query.runs()
        assert (summary.run_id, summary.status) == (broken, "damaged")
        assert summary.damage == "event v1 is missing (found event v2)"
        detail = views.query.run(broken)
        assert detail.status == "damaged" and detail.steps == []
    ctx.close()


@pytest.mark.e2e
def test_projections_status_shows_each_position_and_lag_and_rebuild_takes_a_name(
    workspace: Path,
) -> None:
    ws = str(workspace)
    record_runs(workspace, "prose review")
    (workspace / ".control-room" / "views.sqlite").unlink(missing_ok=True)

    behind = json.loads(cli("projections", "status", "-w", ws, "--json").stdout)
    head = behind[0]["head"]
    assert behind == [
        {"name": "runs", "position": 0, "head": head, "lag": head},
        {"name": "issues", "position": 0, "head": head, "lag": head},
        {"name": "plans", "position": 0, "head": head, "lag": head},
        {"name": "conferences", "position": 0, "head": head, "lag": head},
        {"name": "status", "position": 0, "head": head, "lag": head},
    ]
    rebuilt = cli("projections", "rebuild", "issues", "-w", ws)
    assert rebuilt.returncode == 0
    assert rebuilt.stdout.startswith("rebuilt issues from ")
    assert rebuilt.stdout.endswith(f"events (position {head})\n")
    table = cli("projections", "status", "-w", ws).stdout.splitlines()
    assert table[1].split() == ["runs", "0", str(head), str(head)]
    assert table[2].split() == ["issues", str(head), str(head), "0"]

    unknown = cli("projections", "rebuild", "nope", "-w", ws)
    assert unknown.returncode == 64
    assert (
        "unknown projection 'nope'; known: runs, issues, plans, conferences, status"
        in unknown.stderr
    )


def recorded(position: int, version: int, type_name: str, **data: Any) -> Recorded:
    state = {"originator_id": "run_1", "originator_version": version, "timestamp": AT, **data}
    return Recorded(
        Notification(
            id=position,
            originator_id="run_1",
            originator_version=version,
            topic=type_name,
            state=orjson.dumps(state),
        )
    )


def started(position: int, version: int, step_id: str, **extra: Any) -> Recorded:
    fields = {"step_index": 1, "step_id": step_id, "phase": "b", "output_slot": "draft"}
    return recorded(position, version, "StepStarted", **fields, agent_archetype="writer", **extra)


def answered(position: int, version: int, agent_id: str) -> Recorded:
    return recorded(
        position,
        version,
        "AgentResponded",
        step_id="draft",
        agent_id=agent_id,
        tier="t3",
        provider="offline",
        model="m",
        prompt_hash="h",
        usage={"input_tokens": 1, "output_tokens": 2},
        latency_ms=1.0,
    )


def completed(position: int, version: int, **extra: Any) -> Recorded:
    fields = {"output_hash": "sha256:x", "output_preview": "p", "input_slot_refs": []}
    return recorded(
        position,
        version,
        "StepCompleted",
        step_index=1,
        step_id="draft",
        output_slot="draft",
        **fields,
        **extra,
    )


def test_a_step_that_runs_twice_is_kept_per_instance_and_unknown_events_only_count() -> None:
    run_started = recorded(
        1,
        1,
        "RunStarted",
        recipe_id="r",
        session_id="s",
        trace_id="t",
        total_steps=2,
        task={"description": "d", "args": {}},
        fingerprint="sha256:f",
        routing=None,
    )
    batch = [
        run_started,
        started(2, 2, "draft"),  # written before instances: no instance id, no kind
        answered(3, 3, "writer-1"),
        completed(4, 4),
        started(5, 5, "draft", instance_id="draft#2", kind="agent"),
        recorded(6, 6, "TestChildRunSpawned", child="run_2"),  # a kind this module never saw
        answered(7, 7, "writer-2"),
        completed(8, 8, instance_id="draft#2"),
        recorded(9, 9, "RunCompleted"),
    ]
    with closing(sqlite3.connect(":memory:")) as conn:
        for statement in RunsProjection.schema:
            conn.execute(statement)
        RunsProjection().apply(SQLiteDb(conn), batch[:4])
        RunsProjection().apply(SQLiteDb(conn), batch[4:])  # the next batch resumes from it
        (state,) = conn.execute("SELECT state FROM runs").fetchone()
    view = RunView.from_state(orjson.loads(state))
    steps = view.step_log()
    assert [(s["instance_id"], s["kind"], s["agent_id"], s["status"]) for s in steps] == [
        ("draft", "agent", "writer-1", "done"),
        ("draft#2", "agent", "writer-2", "done"),
    ]
    assert view.version == 9 and view.damage is None and view.status == "done"
    summary = RunDetail.model_validate(view.consolidated()).model_dump(mode="json")["steps"]
    assert "instance_id" not in summary[0] and summary[1]["instance_id"] == "draft#2"


def test_artifact_text_is_stored_once_in_the_views(ctx: Context) -> None:
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    with closing(Views.for_store(ctx.store)) as views:
        views.catch_up()
        texts = dict(
            views.conn.execute("SELECT slot, text FROM artifacts WHERE run_id = ?", (run.id,))
        )
        (state,) = views.conn.execute("SELECT state FROM runs").fetchone()
        assert set(texts) == {
            "scene_brief",
            "draft",
            "edited_draft",
            "continuity_report",
            "continuity_verdict",  # a review gate's verdict
            "critique",
            "critic_verdict",
            "scene_file",  # the write_file step's slot: where the scene was written
        }
        assert all(text not in state.decode() for text in texts.values())
        tables = {row[0] for row in views.conn.execute("SELECT name FROM sqlite_master")}
        assert not tables & {"steps", "slots", "receipts", "tracking"}
        draft = views.query.slot(run.id, "draft")
        assert draft is not None and draft.model_dump()["text"] == texts["draft"]


def test_a_views_file_of_the_old_layout_is_replaced_and_rebuilt(workspace: Path) -> None:
    record_runs(workspace, "prose review")
    path = workspace / ".control-room" / "views.sqlite"
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as old:
        old.executescript(
            "CREATE TABLE tracking (name TEXT PRIMARY KEY, position INTEGER NOT NULL);"
            "INSERT INTO tracking VALUES ('views', 999);"
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY, state TEXT NOT NULL);"
            "CREATE TABLE receipts (receipt_id TEXT PRIMARY KEY, data TEXT NOT NULL);"
        )
    ctx = Context.open(workspace)
    with closing(Views.for_store(ctx.store)) as views:
        assert views.catch_up() >= ctx.store.max_position()
        assert [r.status for r in views.query.runs()] == ["done"]
        tables = {row[0] for row in views.conn.execute("SELECT name FROM sqlite_master")}
        assert "receipts" not in tables and "tracking" not in tables
    ctx.close()


def test_catching_up_from_several_threads_applies_each_event_once(workspace: Path) -> None:
    record_runs(workspace, "Draft scene 4", "consistency check", "prose review")
    ctx = Context.open(workspace)
    readers = [Views.for_store(ctx.store) for _ in range(4)]
    applied: list[int] = []
    threads = [
        threading.Thread(target=lambda v=v: applied.append(v.catch_up(batch_size=5)))
        for v in readers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    live = readers[0].dump()
    assert sum(applied) == readers[0].rebuild()  # together, exactly one pass over the log
    assert readers[0].dump() == live
    for views in readers:
        views.close()
    ctx.close()


def test_a_store_written_by_release_0_1_projects_every_run_and_its_issue(tmp_path: Path) -> None:
    workspace = tmp_path / "legacy"
    (workspace / ".control-room").mkdir(parents=True)
    shutil.copy(FIXTURES / "store_v0_1" / "events.sqlite", workspace / ".control-room")
    ctx = Context.open(workspace)
    with closing(Views.for_store(ctx.store)) as views:
        views.catch_up()
        statuses = {r.run_id: r.status for r in views.query.runs()}
        assert statuses == {
            "run_37f33d5ebba3c308": "done",
            "run_a2bba5b868e9e337": "failed",
            "run_745917163ef65f86": "cancelled",
            "run_26583f907aa56940": "running",
        }
        assert [i.issue_id for i in views.query.issues()] == ["iss_b88f0a52560d70b985d1a0b1"]
        with pytest.raises(RunNotFoundError):
            views.query.run("run_nope")
    ctx.close()


def test_every_response_with_a_known_shape_has_a_schema_from_the_view_models() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]

    def refs_and_bare_objects(node: Any) -> tuple[list[str], int]:
        refs, bare = [], 0
        if isinstance(node, dict):
            bare += node == {"type": "object"}
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            children = list(node.values())
        else:
            children = node if isinstance(node, list) else []
        for child in children:
            more, count = refs_and_bare_objects(child)
            refs, bare = refs + more, bare + count
        return refs, bare

    refs, bare = refs_and_bare_objects(document)
    assert bare == 0
    assert {r.rpartition("/")[2] for r in refs} <= set(schemas)
    run = document["paths"]["/api/runs/{run_id}"]["get"]["responses"]["200"]
    assert run["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RunDetail"
    }
    assert set(schemas["RunDetail"]["properties"]) >= APPENDIX_D_KEYS
    assert "damaged" in schemas["RunSummary"]["properties"]["status"]["enum"]


def test_projections_status_lists_the_analytics_projection_once_it_exists(
    workspace: Path,
) -> None:
    ws = str(workspace)
    record_runs(workspace, "prose review")
    names = [s["name"] for s in json.loads(cli("projections", "status", "-w", ws, "--json").stdout)]
    assert "analytics" not in names  # never created just to be listed
    assert cli("analytics", "SELECT count(*) FROM events", "-w", ws).returncode == 0
    listed = json.loads(cli("projections", "status", "-w", ws, "--json").stdout)
    (analytics,) = [s for s in listed if s["name"] == "analytics"]
    assert analytics["lag"] == 0 and analytics["position"] == analytics["head"]
