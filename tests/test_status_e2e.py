"""The pipelines' status end to end: over HTTP and SSE from a real server on 127.0.0.1 (which
exports STATUS.md as it follows the log), and through the `controlroom status` CLI."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.domain.status_report import STATUS_PATH, status_report_id
from controlroom.engine.context import Context
from tests.conftest import write_override
from tests.live import live_server, read_sse
from tests.test_cli_e2e import cli
from tests.test_status import PIPELINE, pipeline_recipe

pytestmark = pytest.mark.e2e


def until(check: Any, what: str, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def start(client: httpx.Client, scene: int = 4, ends: str = "done") -> str:
    response = client.post(
        "/api/runs", json={"recipe_id": PIPELINE, "args": {"scene_number": scene}}
    )
    assert response.status_code == 201, response.text
    run_id: str = response.json()["run_id"]

    def finished() -> str | None:
        status: str = client.get(f"/api/runs/{run_id}").json()["status"]
        return status if status in ("done", "failed") else None

    status = until(finished, f"{run_id} finished")
    assert status == ends
    return run_id


def until_run_started(client: httpx.Client, url: str) -> list[tuple[str, str]]:
    """Each message's event type and stream id, up to the first `RunStarted`."""
    seen: list[tuple[str, str]] = []
    with client.stream("GET", url, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                data = json.loads(line.removeprefix("data:"))
                seen.append((data["type"], data["run_id"]))
                if data["type"] == "RunStarted":
                    break
    return seen


def harsh_critic(workspace: Path) -> None:
    """The critic fails every draft it reads: its advisory gate rolls back once, then lets
    the run go on (two escalations), whatever the offline draft's own merits."""
    models = {
        "providers": {
            "offline": {"type": "offline", "faults": {"harsh-1": {"fault": "verdict_fail"}}}
        },
        "roles": {"critic": {"provider": "offline", "model": "harsh-1"}},
    }
    (workspace / ".control-room").mkdir(exist_ok=True)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(models))


def test_pipelines_over_http_and_their_live_feed(workspace: Path) -> None:
    write_override(workspace, f"{PIPELINE}.json", pipeline_recipe())
    harsh_critic(workspace)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/api/pipelines").json() == []
        first = start(client)
        (row,) = until(
            lambda: [r for r in client.get("/api/pipelines").json() if r["iterations"] == 1],
            "the first iteration archived",
        )
        assert (row["target"], row["recipe_id"], row["iteration"]) == (
            f'{PIPELINE} {{"scene_number":4}}',
            PIPELINE,
            1,
        )
        assert (row["run_id"], row["run_status"], row["last_result"]) == (first, "done", "done")
        target_id = row["target_id"]

        detail = client.get(f"/api/pipelines/{target_id}").json()
        assert detail["current"]["run_id"] == first
        assert [s["state"] for s in detail["current"]["steps"]] == ["done"] * len(
            detail["current"]["steps"]
        )
        assert [h["run_id"] for h in detail["history"]] == [first]
        # The gate in the recipe rolls back once and accepts: both are escalations.
        assert [e["kind"] for e in detail["current"]["escalations"]] == ["rollback", "accept"]

        for wrong in ("itr_" + "0" * 24, "nope"):
            missing = client.get(f"/api/pipelines/{wrong}")
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "not_found"
            assert client.get(f"/api/pipelines/{wrong}/events").status_code == 404

        # STATUS.md: exported by the server's followers, the same text GET serves.
        status_md = workspace / STATUS_PATH
        until(
            lambda: (
                status_md.exists()
                and client.get(f"/api/pipelines/{target_id}").json()["export"] is not None
            ),
            "STATUS.md exported",
        )
        served = client.get("/api/pipelines/status.md")
        assert served.headers["content-type"].startswith("text/markdown")
        assert served.text == status_md.read_text(encoding="utf-8")
        assert "## Pipeline `draft_pipeline" in served.text and "| #1 | done" in served.text
        export = client.get(f"/api/pipelines/{target_id}").json()["export"]
        assert (export["path"], export["state"]) == (STATUS_PATH, "exported")

        # The feed from the start: exactly the events of its run, its iteration, its export.
        ctx = Context.open(workspace)
        try:
            mine = {first, target_id, status_report_id(STATUS_PATH)}
            positions = [p.position for p in ctx.store.read_log() if p.event.originator_id in mine]
            head = ctx.store.max_position()
        finally:
            ctx.close()
        feed = read_sse(client, f"/api/pipelines/{target_id}/events?after=0", limit=len(positions))
        assert [int(m["id"]) for m in feed] == positions
        assert feed[0]["event"] == "RunStarted"
        assert "IterationArchived" in [m["event"] for m in feed]
        middle = positions[len(positions) // 2]
        rest = read_sse(
            client,
            f"/api/pipelines/{target_id}/events",
            headers={"Last-Event-ID": str(middle)},
            limit=len([p for p in positions if p > middle]),
        )
        assert [int(m["id"]) for m in rest] == [p for p in positions if p > middle]

        # A run started on the target while the feed is open joins it; another target's
        # run does not (the STATUS.md export's events, shared by every target, do).
        joined: list[tuple[str, str]] = []
        reader = threading.Thread(
            target=lambda: joined.extend(
                until_run_started(client, f"/api/pipelines/{target_id}/events?after={head}")
            )
        )
        reader.start()
        other = start(client, scene=5, ends="failed")  # another target (no such scene)
        second = start(client)
        reader.join(timeout=30)
        assert joined[-1] == ("RunStarted", second)
        assert {run for _, run in joined[:-1]} <= {status_report_id(STATUS_PATH)}
        assert other not in {run for _, run in joined}
        rows = until(
            lambda: [r for r in client.get("/api/pipelines").json() if r["iterations"]],
            "two targets",
        )
        assert len(client.get("/api/pipelines").json()) == 2 and rows
        until(lambda: "**Iteration:** 2" in status_md.read_text(encoding="utf-8"), "iteration 2")


def test_the_status_command_prints_exports_and_refuses_to_clobber(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import DEMO_LEFTOVERS, EXAMPLE

    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    write_override(ws, f"{PIPELINE}.json", pipeline_recipe())
    w = ("-w", str(ws))
    empty = cli("status", *w)
    assert empty.returncode == 0 and "No pipeline has run yet." in empty.stdout

    assert cli("run", PIPELINE, "--arg", "scene_number=4", "--quiet", *w).returncode == 0
    status_md = ws / STATUS_PATH
    exported = status_md.read_text(encoding="utf-8")
    printed = cli("status", *w)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("# Status") and "**Iteration:** 1" in printed.stdout
    assert printed.stdout == exported  # the same text the export wrote
    assert "- ✅ Phase 0: `discover` (tool, file_locator) — done" in printed.stdout

    (detail,) = json.loads(cli("status", "--json", *w).stdout)
    target_id = detail["target_id"]
    one = cli("status", target_id, "--json", *w)
    assert json.loads(one.stdout) == detail and detail["export"]["state"] == "exported"
    single = cli("status", target_id, *w)
    assert single.stdout.startswith("# Pipeline `draft_pipeline")
    assert "\n## History\n" in single.stdout
    unknown = cli("status", "itr_" + "0" * 24, *w)
    assert unknown.returncode == 64 and "no pipeline" in unknown.stderr

    # Someone edits STATUS.md: the next run does not overwrite it, and says so.
    status_md.write_text(exported + "\nmy note\n", encoding="utf-8")
    assert cli("run", PIPELINE, "--arg", "scene_number=4", "--quiet", *w).returncode == 0
    assert status_md.read_text(encoding="utf-8").endswith("my note\n")
    warned = cli("status", *w)
    assert "**Iteration:** 2" in warned.stdout
    assert "is not up to date (conflict)" in warned.stderr
    refused = cli("status", "--export", *w)
    assert refused.returncode == 75 and status_md.read_text(encoding="utf-8").endswith("my note\n")
    issues = cli("issues", "list", "--json", *w)
    assert any(i["kind"] == "file_conflict" for i in json.loads(issues.stdout))

    status_md.unlink()
    again = cli("status", "--export", *w)
    assert again.returncode == 0, again.stderr
    assert "**Iteration:** 2" in status_md.read_text(encoding="utf-8")
