"""The HTTP API and SSE feeds through a real server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.api.app import ROUTES
from tests.bundled import BUNDLED_RECIPES
from tests.conftest import APPENDIX_D_KEYS, NEEDS_SCENE_RECIPE, write_override
from tests.live import live_server, read_sse

pytestmark = pytest.mark.e2e


def wait_for(client: httpx.Client, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        view: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if view["status"] == status:
            return view
        time.sleep(0.05)
    raise AssertionError(f"{run_id} never became {status}")


def test_a_run_started_over_http_streams_every_event_and_resumes_exactly(
    workspace: Path,
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        started = client.post("/api/runs", json={"task": "Draft scene 4 from the outline"})
        assert started.status_code == 201
        run_id = started.json()["run_id"]
        assert started.json() == {"run_id": run_id, "status": "running"}

        feed = read_sse(client, f"/api/runs/{run_id}/events")
        # Streamed model output arrives as transient `partial` messages (no id, never stored).
        assert all("id" not in m for m in feed if m["event"] == "partial")
        everything = [m for m in feed if m["event"] != "partial"]
        types = [m["event"] for m in everything]
        assert types[0] == "RunStarted" and types[-1] == "RunCompleted"
        positions = [int(m["id"]) for m in everything]
        assert positions == sorted(set(positions))
        assert all(m["data"]["run_id"] == run_id for m in everything)

        middle = positions[len(positions) // 2]
        rest = read_sse(
            client, f"/api/runs/{run_id}/events", headers={"Last-Event-ID": str(middle)}
        )
        assert [int(m["id"]) for m in rest] == [p for p in positions if p > middle]
        via_query = read_sse(client, f"/api/runs/{run_id}/events?after={middle}")
        assert via_query == rest
        assert read_sse(client, f"/api/runs/{run_id}/events?after={positions[-1]}") == []

        view = client.get(f"/api/runs/{run_id}").json()
        assert view["status"] == "done" and view["total_steps"] == 11
        assert set(view) >= APPENDIX_D_KEYS
        steps = client.get(f"/api/runs/{run_id}/steps").json()
        assert [s["status"] for s in steps] == ["done"] * 11
        assert steps[0]["receipt_id"].startswith("rcpt_") and steps[0]["output_hash"]
        pointer = client.get(f"/api/runs/{run_id}/cache/discovery").json()
        assert pointer["type"] == "pointer" and set(pointer) == {
            "slot",
            "type",
            "receipt_id",
            "sha256",
            "summary",
        }
        artifact = client.get(f"/api/runs/{run_id}/cache/scene_brief").json()
        assert artifact["type"] == "artifact" and artifact["agent_id"] == "planner-001"
        assert artifact["text"].startswith("# Scene brief")
        listed = client.get("/api/runs", params={"status": "done"}).json()
        assert [r["run_id"] for r in listed] == [run_id]
        assert client.get("/api/runs", params={"recipe_id": "structural_canon"}).json() == []


def test_errors_are_json_and_name_the_field(workspace: Path) -> None:
    write_override(workspace, "needs.json", NEEDS_SCENE_RECIPE)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        unknown = client.post("/api/runs", json={"recipe_id": "zzz"})
        assert unknown.status_code == 400
        assert unknown.json()["error"]["field"] == "recipe_id"
        missing = client.post("/api/runs", json={"recipe_id": "needs_scene"})
        assert missing.status_code == 400
        assert missing.json()["error"] == {
            "code": "missing_args",
            "field": "args.scene_path",
            "message": missing.json()["error"]["message"],
        }
        malformed = client.post(
            "/api/runs", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 400
        assert malformed.json()["error"]["code"] == "malformed_json"
        wrong_type = client.post("/api/runs", json={"recipe_id": "x", "args": []})
        assert wrong_type.status_code == 400 and wrong_type.json()["error"]["field"] == "args"
        empty = client.post("/api/runs", json={})
        assert empty.status_code == 400
        huge = client.post(
            "/api/runs",
            content=b"x" * (1024 * 1024 + 1),
            headers={"content-type": "application/json"},
        )
        assert huge.status_code == 413
        assert client.get("/api/runs/run_nope").status_code == 404
        assert client.get("/api/runs/run_nope/events").status_code == 404
        assert client.post("/api/runs/run_nope/cancel").status_code == 404
        assert client.get("/api/runs", params={"status": "weird"}).status_code == 400
        assert client.get("/api/issues/iss_nope").status_code == 404
        assert client.get("/api/recipes/zzz").status_code == 400
        bad_after = client.get("/api/events", params={"after": "x"})
        assert bad_after.status_code == 400 and bad_after.json()["error"]["field"] == "after"
        assert client.get("/nowhere").json()["error"]["code"] == "not_found"


def test_cancel_stops_a_running_run_and_refuses_a_finished_one(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", "400")
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = client.post("/api/runs", json={"recipe_id": "creative_draft_scene"}).json()[
            "run_id"
        ]
        wait_for_phase_b(client, run_id)
        cancelled = client.post(f"/api/runs/{run_id}/cancel")
        assert cancelled.status_code == 200
        assert cancelled.json() == {"run_id": run_id, "status": "cancelled"}
        events = read_sse(client, f"/api/runs/{run_id}/events")
        assert events[-1]["event"] == "RunCancelled"
        time.sleep(0.6)  # longer than one model call: nothing more may be recorded
        assert read_sse(client, f"/api/runs/{run_id}/events") == events
        again = client.post(f"/api/runs/{run_id}/cancel")
        assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"


def wait_for_phase_b(client: httpx.Client, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while client.get(f"/api/runs/{run_id}").json().get("phase") != "b":
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_audit_lists_hashed_events_and_shows_the_view_at_any_version(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = client.post("/api/runs", json={"task": "consistency check"}).json()["run_id"]
        read_sse(client, f"/api/runs/{run_id}/events")
        audit = client.get(f"/api/runs/{run_id}/audit").json()
        events = audit["events"]
        assert [e["version"] for e in events] == list(range(1, len(events) + 1))
        assert all(
            b["prev_hash"] == a["event_hash"] for a, b in zip(events, events[1:], strict=False)
        )
        first = client.get(f"/api/runs/{run_id}/audit", params={"at": 1}).json()
        assert first["status"] == "running" and first["steps"] == []
        second = client.get(f"/api/runs/{run_id}/audit", params={"at": 2}).json()
        assert [s["status"] for s in second["steps"]] == ["running"]
        last = client.get(f"/api/runs/{run_id}/audit", params={"at": len(events)}).json()
        assert last == {**client.get(f"/api/runs/{run_id}").json(), "version": len(events)}
        assert client.get(f"/api/runs/{run_id}/audit", params={"at": 0}).status_code == 400
        issues = client.get("/api/issues", params={"run_id": run_id}).json()
        assert len(issues) == 1
        issue = client.get(f"/api/issues/{issues[0]['issue_id']}").json()
        assert "green" in json.dumps(issue["evidence"])


def test_the_global_feed_filters_by_run_and_type(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        first = client.post("/api/runs", json={"task": "prose review"}).json()["run_id"]
        second = client.post("/api/runs", json={"task": "restructure the outline"}).json()["run_id"]
        for run_id in (first, second):
            read_sse(client, f"/api/runs/{run_id}/events")
        starts = read_sse(client, "/api/events?type=RunStarted,RunCompleted", limit=4)
        assert sorted(m["event"] for m in starts) == ["RunCompleted"] * 2 + ["RunStarted"] * 2
        only_second = read_sse(client, f"/api/events?run_id={second}&type=StepCompleted", limit=4)
        assert {m["data"]["run_id"] for m in only_second} == {second}


def test_the_token_guards_every_endpoint(workspace: Path) -> None:
    with live_server(workspace, token="s3cret") as base:
        with httpx.Client(base_url=base, timeout=30) as anonymous:
            refused = anonymous.get("/api/runs")
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "unauthorized"
            assert anonymous.get("/openapi.json").status_code == 401
        with httpx.Client(
            base_url=base, timeout=30, headers={"Authorization": "Bearer wrong"}
        ) as wrong:
            assert wrong.get("/api/runs").status_code == 401
        with httpx.Client(
            base_url=base, timeout=30, headers={"Authorization": "Bearer s3cret"}
        ) as client:
            assert client.get("/api/runs").status_code == 200


def test_the_openapi_document_describes_every_endpoint(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        document = client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    for route in ROUTES:
        if route.path == "/openapi.json":
            continue
        assert route.methods is not None
        for method in route.methods - {"HEAD"}:
            operation = document["paths"][route.path][method.lower()]
            assert operation["responses"], route.path
    body = document["components"]["schemas"]["StartRunBody"]
    assert set(body["properties"]) == {"recipe_id", "task", "args", "session_id"}


def test_recipes_and_routing_over_http(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        recipes = client.get("/api/recipes").json()
        assert len(recipes) == BUNDLED_RECIPES
        recipe = client.get("/api/recipes/analytical_prose").json()
        assert recipe["phase_a"][1]["tool"] == "prose_analyzer"
        routed = client.post("/api/route", json={"task": "foreshadowing audit"}).json()
        assert routed["recipe_id"] == "analytical_foreshadow" and routed["routable"] is True
        assert client.post("/api/route", json={"task": ""}).status_code == 400
        # An HTTP client is told how to plan unroutable work over HTTP, not only the CLI.
        unroutable = client.post("/api/route", json={"task": "make the villain scarier"}).json()
        assert unroutable["routable"] is False
        plan_over_http = 'POST /api/plans` with {"intent": "make the villain scarier"}'
        assert plan_over_http in unroutable["reason"]


def test_the_server_resumes_unfinished_runs_when_it_starts(workspace: Path) -> None:
    from controlroom.engine.context import Context
    from controlroom.engine.service import RunRequest, RunService

    ctx = Context.open(workspace)
    run = RunService(ctx).start(RunRequest("structural_outline", {}))  # recorded, not executed
    ctx.close()
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert wait_for(client, run.id, "done")["status"] == "done"
        events = [m["event"] for m in read_sse(client, f"/api/runs/{run.id}/events")]
        # taken up by the server's claim; never executed before, so not counted as resumed
        assert "RunClaimed" in events and "RunResumed" not in events


def test_partial_output_streams_live_but_is_never_stored(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slow enough that the feed is open before the first agent streams, on a busy machine too
    # (partial text goes only to those listening: it is never stored).
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", "500")
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = client.post("/api/runs", json={"recipe_id": "structural_outline"}).json()["run_id"]
        live = read_sse(client, f"/api/runs/{run_id}/events")
        partials = [m for m in live if m["event"] == "partial"]
        assert partials and all("id" not in m for m in partials)
        assert {m["data"]["step_id"] for m in partials} == {"restructure", "evaluate"}
        stored = [m for m in live if m["event"] != "partial"]
        assert stored[-1]["event"] == "RunCompleted"
        replayed = read_sse(client, f"/api/runs/{run_id}/events")  # finished: history only
        assert replayed == stored
        outline_plan = client.get(f"/api/runs/{run_id}/cache/outline_plan").json()["text"]
        streamed = "".join(
            m["data"]["text"] for m in partials if m["data"]["step_id"] == "restructure"
        )
        assert streamed.strip() == outline_plan.strip()
