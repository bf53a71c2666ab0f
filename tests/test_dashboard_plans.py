"""The dashboard's plan view in headless Chromium against a real server on 127.0.0.1: the
Chief's plan drawn as a graph with every task's state, approved and started from the page,
updating live, and a scoping question answered from the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live import live_server
from tests.test_dashboard import browser, watch  # noqa: F401  (fixtures)

INTENT = "Write scene 4, then check consistency of scenes 3-4 against canon, and let's do scene 3"


def test_a_plan_is_approved_started_and_answered_from_the_page(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", "150")
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        page = seen.open("/#/plans")
        page.fill("#plan-intent", INTENT)
        page.click("#new-plan button[type=submit]")
        page.wait_for_selector("#plan-approve")
        states = page.eval_on_selector_all(
            ".task", "ts => ts.map(t => [t.dataset.taskId, t.dataset.state])"
        )
        assert states == [["1", "pending"], ["3", "needs_scoping"], ["2", "blocked"]]
        seen.shot("plan-draft")

        page.click("#plan-approve")
        page.click("#plan-start")
        page.wait_for_selector('.task[data-task-id="2"][data-state="done"]')
        seen.shot("plan-running")

        # The ambiguous "let's do scene 3" offers choices; the second is picked by number.
        page.fill('.answer-form[data-task-id="3"] input', "2")
        page.click('.answer-form[data-task-id="3"] button')
        page.wait_for_selector('.task[data-task-id="3"][data-state="done"]')
        page.wait_for_selector('h1 .badge[data-status="done"]')
        plan_id = page.url.rsplit("/", 1)[-1]
        plan = client.get(f"/api/plans/{plan_id}").json()
        assert plan["status"] == "done"
        assert plan["tasks"][2]["description"] == "Validate scene 3 against the outline"
        assert seen.problems == []
