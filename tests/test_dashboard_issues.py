"""The dashboard's issue view in headless Chromium: the audit trail with a receipt's report
opened on demand, and comment, close and reopen from the page, each recorded as an event."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from controlroom.engine.context import Context
from controlroom.models.agents import AgentDirectory
from tests.live import live_server
from tests.test_dashboard import browser, watch  # noqa: F401  (fixtures)
from tests.test_issue_lifecycle import run
from tests.test_playbook import TASK, Scripted


def test_an_issue_is_read_with_its_trail_and_closed_and_reopened_from_the_page(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    def record_a_stop_hook_run() -> None:
        model = Scripted("critique_scene", *"xxx")
        ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
        try:
            run(ctx, TASK)
        finally:
            ctx.close()

    # In a thread of its own: the browser fixture's event loop runs in this one.
    worker = threading.Thread(target=record_a_stop_hook_run)
    worker.start()
    worker.join(timeout=60)
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        (issue,) = client.get("/api/issues").json()
        page = seen.open(f"/#/issues/{issue['issue_id']}")
        page.wait_for_selector('#issue-trail tr[data-kind="stop_hook"]')
        page.click("#issue-trail .open-report >> nth=0")
        page.wait_for_selector("#issue-trail .report pre")
        assert "# Scene plan" in page.inner_text("#issue-trail .report pre")
        seen.shot("issue-trail")
        page.fill("#issue-note", "retrying with a better model")
        page.click("#issue-comment")
        page.wait_for_selector("#issue-history li >> text=commented")
        page.fill("#issue-note", "fixed by the retry")
        page.click("#issue-close")
        page.wait_for_selector('h1 .badge[data-status="closed"]')
        page.fill("#issue-note", "not fixed after all")
        page.click("#issue-reopen")
        page.wait_for_selector('h1 .badge[data-status="open"]')
        history = client.get(f"/api/issues/{issue['issue_id']}").json()["history"]
        assert [h["event"] for h in history][-3:] == ["commented", "closed", "reopened"]

        # The list is live: an issue closed elsewhere (the CLI, another tab) shows closed.
        page.goto(f"{base}/#/issues")
        row = f'#issues tr[data-issue-id="{issue["issue_id"]}"]'
        page.wait_for_selector(f'{row} .badge[data-status="open"]')
        page.wait_for_selector('#connection[data-state="live"]')
        closed = client.post(f"/api/issues/{issue['issue_id']}/close", json={"reason": "done"})
        assert closed.status_code == 200, closed.text
        page.wait_for_selector(f'{row} .badge[data-status="closed"]')
        assert seen.problems == []


def test_a_run_waiting_for_a_person_is_answered_from_the_issue_page_and_finishes(
    tmp_path: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    import json
    import time

    from tests.test_cli_e2e import cli
    from tests.test_ladder_e2e import LADDER, workspace

    ws = workspace(tmp_path, "ws", LADDER)
    assert (
        cli(
            "run", "creative_draft_scene", "--arg", "scene_number=4", "-w", str(ws), "-q"
        ).returncode
        == 3
    )
    with (
        live_server(ws) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        (issue,) = [i for i in client.get("/api/issues").json() if i["kind"] == "needs_human"]
        run_id = issue["run_id"]
        page = seen.open(f"/#/runs/{run_id}")
        page.wait_for_selector("#run-waiting-person a")
        page.click("#run-waiting-person a")
        page.wait_for_selector("#issue-answer")
        assert "rung escalate" in page.inner_text("#issue-detail")
        seen.shot("issue-answer")
        page.fill("#issue-resolution", "Draft it plainly.")
        page.fill("#issue-model", "offline:offline-deterministic-1")
        page.click("#issue-answer")
        page.wait_for_selector('h1 .badge[data-status="closed"]')
        deadline = time.monotonic() + 30
        while client.get(f"/api/runs/{run_id}").json()["status"] != "done":
            assert time.monotonic() < deadline, "the answered run did not finish"
            time.sleep(0.2)
        view = client.get(f"/api/runs/{run_id}").json()
        assert [r["kind"] for r in view["ladder"]][-1] == "answered"
        assert "waiting_for_person" not in view
        assert json.loads(json.dumps(view["steps"]))  # served whole
        assert seen.problems == []


def test_the_run_page_shows_what_every_reply_cost_rejected_ones_and_rungs_included(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    from tests.test_ladder import open_ctx, run_to_rest

    def escalate() -> str:
        ctx, _ = open_ctx(
            workspace,
            {"model": "bad-1", "escalation": [{"provider": "lab", "model": "good"}]},
        )
        try:
            return run_to_rest(ctx).id
        finally:
            ctx.close()

    ran: list[str] = []
    worker = threading.Thread(target=lambda: ran.append(escalate()))
    worker.start()
    worker.join(timeout=60)
    (run_id,) = ran
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        view = client.get(f"/api/runs/{run_id}").json()
        assert view["cost_usd"] > 0 and [r["kind"] for r in view["ladder"]] == ["escalate"]
        page = seen.open(f"/#/runs/{run_id}")
        # The element is there before its figure: wait for the figure itself.
        page.wait_for_function(
            "() => (document.querySelector('#run-cost')?.textContent || '').startsWith('$')"
        )
        shown = page.inner_text("#run-cost")
        assert shown.startswith(f"${view['cost_usd']:.6f}"), (shown, view["cost_usd"])
        assert seen.problems == []
