"""The dashboard as HTTP serves it: the page and its files, their security headers, and the
two reads it added (a run's hash-chain verdict, the log's head)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import httpx

from controlroom.api.dashboard import STATIC
from tests.live import live_server, read_sse


def test_the_page_and_its_files_are_served_with_a_strict_content_security_policy(
    workspace: Path,
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        for name in re.findall(r'(?:src|href)="/static/([^"]+)"', page.text):
            asset = client.get(f"/static/{name}")
            assert asset.status_code == 200, name
            assert asset.headers["content-security-policy"] == policy
        script = client.get("/static/app.js")
        assert "javascript" in script.headers["content-type"]
        assert "content-security-policy" not in client.get("/api/runs").headers


def test_the_page_holds_no_inline_script_and_fetches_nothing_from_elsewhere() -> None:
    html = (STATIC / "index.html").read_text()
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None
    assert re.search(r"<[^>]*\son[a-z]+\s*=", html) is None  # no inline event handlers
    for path in STATIC.iterdir():
        text = path.read_text()
        assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text
        assert "innerHTML" not in text and "eval(" not in text, path.name


def test_with_a_token_the_page_loads_but_every_api_call_needs_it(workspace: Path) -> None:
    with live_server(workspace, token="s3cret") as base:
        with httpx.Client(base_url=base, timeout=30) as anonymous:
            assert anonymous.get("/").status_code == 200
            assert anonymous.get("/static/api.js").status_code == 200
            assert anonymous.get("/api/log/head").status_code == 401
            assert anonymous.post("/").status_code == 401
            assert anonymous.get("/static/../api/runs").status_code in (401, 404)
        with httpx.Client(
            base_url=base, timeout=30, headers={"Authorization": "Bearer s3cret"}
        ) as client:
            assert client.get("/api/log/head").json() == {"position": 0}


def test_verify_says_a_run_is_intact_until_a_byte_of_its_events_changes(
    workspace: Path,
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = client.post("/api/runs", json={"task": "prose review"}).json()["run_id"]
        messages = read_sse(client, f"/api/runs/{run_id}/events")
        events = [m for m in messages if m["event"] != "partial"]
        intact = client.get(f"/api/runs/{run_id}/verify").json()
        uncovered = intact.pop("not_covered")
        assert intact == {"run_id": run_id, "verified": True, "events": len(events), "problems": []}
        assert (uncovered["first_version"], uncovered["last_version"]) == (1, len(events))
        assert "not covered by any checkpoint" in uncovered["message"]
        assert client.get("/api/log/head").json()["position"] >= events[-1]["data"]["position"]

        change_one_byte(workspace, run_id, version=2)
        tampered = client.get(f"/api/runs/{run_id}/verify").json()
        assert tampered["verified"] is False
        assert tampered["problems"][0]["version"] == 2
        assert tampered["problems"][0]["kind"] == "changed"
        missing = client.get("/api/runs/run_nope/verify")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_the_openapi_document_describes_the_dashboard_reads(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        document = client.get("/openapi.json").json()
    verify = document["paths"]["/api/runs/{run_id}/verify"]["get"]["responses"]["200"]
    assert verify["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Verification"
    }
    schemas = document["components"]["schemas"]
    assert {"Verification", "VerificationProblem", "LogHead"} <= set(schemas)
    assert "/" not in document["paths"]


def change_one_byte(workspace: Path, run_id: str, version: int) -> None:
    """Flip one character of one stored event, as someone editing the file by hand would."""
    with sqlite3.connect(workspace / ".control-room" / "events.sqlite") as conn:
        (state,) = conn.execute(
            "SELECT state FROM stored_events WHERE originator_id = ? AND originator_version = ?",
            (run_id, version),
        ).fetchone()
        at = state.index(b'"step_id":"') + len(b'"step_id":"')
        forged = state[:at] + bytes([state[at] ^ 0x01]) + state[at + 1 :]
        conn.execute(
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
            (forged, run_id, version),
        )
