"""The dashboard's conference view in headless Chromium: a round asked from the page, its
evidence and every role's reply shown, a rejected reply with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.live import live_server
from tests.test_dashboard import browser, watch  # noqa: F401  (fixtures)


def test_a_round_is_asked_and_read_from_the_page(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        page = seen.open("/#/conferences")
        page.fill("#round-question", "Is Kael consistent with his canon card?")
        page.fill("#round-roles", "continuity,critic,editor")
        page.check("#round-require-tool")
        page.click("#new-round button[type=submit]")
        page.wait_for_selector('h1 .badge[data-status="closed"]')
        statuses = page.eval_on_selector_all(
            "#round-replies .reply", "rs => rs.map(r => [r.dataset.role, r.dataset.status])"
        )
        assert statuses == [
            ["continuity", "accepted"],
            ["critic", "accepted"],
            ["editor", "accepted"],
        ]
        assert page.eval_on_selector_all("#round-receipts li", "l => l.length") == 2
        seen.shot("conference")
        (listed,) = client.get("/api/conferences").json()
        assert listed["issue_id"] and page.is_visible(f"a[href='#/issues/{listed['issue_id']}']")
        assert seen.problems == []
