"""Resuming a run nobody advances, from the page and over HTTP: a run whose process was
killed (SIGKILL after a commit) shows Resume; the click records RunResumed and the server
finishes it. A finished run, or one a live process holds, is refused with 409. Before anyone
resumes it, the page says the run is interrupted and why, and counts no time for the step
its process died in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from controlroom.api.app import create_app
from controlroom.engine.context import Context
from tests.live import live_server, serve_app
from tests.test_cli_e2e import cli
from tests.test_dashboard import browser, watch  # noqa: F401  (fixtures)


def test_a_killed_run_is_resumed_from_the_page(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    ws = str(workspace)
    killed = cli(
        "run", "Draft scene 4", "-w", ws, "-q", env={"CONTROLROOM_CRASH_AFTER_COMMIT": "4"}
    )
    assert killed.returncode == -9
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        # The server resumes unfinished runs when it starts; this one it must be asked to.
        (run,) = client.get("/api/runs").json()
        page = seen.open(f"/#/runs/{run['run_id']}")
        if run["status"] == "running":
            button = page.wait_for_selector("#resume-run", timeout=10_000)
            assert button is not None
            seen.shot("run-resume")
            page.click("#resume-run")
        page.wait_for_selector('h1 .badge[data-status="done"]')
        events = [
            e["type"] for e in client.get(f"/api/runs/{run['run_id']}/audit").json()["events"]
        ]
        assert "RunResumed" in events
        again = client.post(f"/api/runs/{run['run_id']}/resume")
        assert again.status_code == 409 and "nothing to resume" in again.text
        assert client.post("/api/runs/run_nope/resume").status_code == 404
        assert seen.problems == []


def test_a_killed_run_shows_as_interrupted_with_the_reason(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    ws = str(workspace)
    killed = cli(
        "run", "Draft scene 4", "-w", ws, "-q", env={"CONTROLROOM_CRASH_AFTER_COMMIT": "4"}
    )
    assert killed.returncode == -9
    ctx = Context.open(workspace)
    try:  # a server that executes nothing: it leaves the run as the kill left it
        with (
            serve_app(create_app(ctx, execute=False)) as base,
            httpx.Client(base_url=base, timeout=30) as client,
            watch(base) as seen,
        ):
            (run,) = client.get("/api/runs").json()
            page = seen.open(f"/#/runs/{run['run_id']}")
            page.wait_for_selector('h1 .badge[data-status="interrupted"]')
            assert "is gone" in page.inner_text("#run-stalled")
            assert page.query_selector("#resume-run") is not None
            running = page.query_selector('li.step[data-status="running"]')
            assert running is not None and "stopped" in running.inner_text()
            assert page.inner_text("#dod-not-checked").startswith("Not checked yet")
            seen.shot("run-interrupted")
            assert seen.problems == []
    finally:
        ctx.close()
