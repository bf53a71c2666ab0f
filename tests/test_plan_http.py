"""Session plans over real HTTP on 127.0.0.1: create, controls, errors naming the field, the
plan's SSE feed (plan and run events, resumable, ends with the plan), the OpenAPI entries."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.live import live_server, read_sse

INTENT = "Write scene 4, then check consistency of scenes 3-4 against canon"


def test_a_plan_is_created_approved_and_run_by_the_server_with_a_live_feed(
    workspace: Path,
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/api/plans", json={"intent": INTENT})
        assert created.status_code == 201, created.text
        plan = created.json()
        plan_id = plan["plan_id"]
        assert [t["state"] for t in plan["tasks"]] == ["pending", "blocked"]
        refused = client.post(f"/api/plans/{plan_id}/start")
        assert refused.status_code == 409 and "approve it first" in refused.text
        assert client.post(f"/api/plans/{plan_id}/approve").json()["status"] == "approved"
        assert client.post(f"/api/plans/{plan_id}/start").json()["status"] == "running"

        everything = read_sse(client, f"/api/plans/{plan_id}/events")
        assert any(m["event"] == "partial" for m in everything)  # the drafts as they stream
        messages = [m for m in everything if m["event"] != "partial"]
        types = [m["event"] for m in messages]
        assert types[-1] == "PlanFinished"  # the feed ends with the plan
        assert "RunCompleted" in types and "TaskFinished" in types
        ids = [int(m["id"]) for m in messages]
        assert ids == sorted(set(ids))  # global positions, in order, once

        # Resuming after an event misses nothing and repeats nothing.
        middle = ids[len(ids) // 2]
        resumed = read_sse(
            client, f"/api/plans/{plan_id}/events", headers={"Last-Event-ID": str(middle)}
        )
        assert [int(m["id"]) for m in resumed if "id" in m] == [i for i in ids if i > middle]
        assert (
            read_sse(
                client, f"/api/plans/{plan_id}/events", headers={"Last-Event-ID": str(ids[-1])}
            )
            == []
        )

        final = client.get(f"/api/plans/{plan_id}").json()
        assert final["status"] == "done"
        assert all(t["run_status"] == "done" for t in final["tasks"])
        listed = client.get("/api/plans").json()
        assert [p["plan_id"] for p in listed] == [plan_id]


def test_bad_plan_input_gets_a_clear_error_naming_the_field(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.post("/api/plans", json={}).status_code == 400
        plan_id = client.post("/api/plans", json={"intent": INTENT}).json()["plan_id"]
        bad_order = client.post(f"/api/plans/{plan_id}/reorder", json={"order": [2, 1]})
        assert bad_order.status_code == 400
        assert bad_order.json()["error"]["field"] == "order"
        unknown_task = client.post(f"/api/plans/{plan_id}/remove", json={"task_id": 9})
        assert unknown_task.json()["error"]["field"] == "task_id"
        not_asked = client.post(f"/api/plans/{plan_id}/answer", json={"task_id": 1, "answer": "x"})
        assert not_asked.status_code == 400 and "no scoping question" in not_asked.text
        assert client.get("/api/plans/plan_nope").status_code == 404
        assert client.post("/api/plans/plan_nope/approve").status_code == 404
        assert client.get("/api/plans?status=bogus").json()["error"]["field"] == "status"
        paths = client.get("/openapi.json").json()["paths"]
        assert "/api/plans/{plan_id}/answer" in paths and "/api/plans/{plan_id}/events" in paths
