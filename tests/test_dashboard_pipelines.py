"""The dashboard's pipelines view in headless Chromium against a real server on 127.0.0.1: a
pipeline whose writer climbs its whole ladder and waits for a person shows its blocker and
escalations; answered, the page follows it live to its archived iteration."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import write_override
from tests.live import live_server
from tests.test_dashboard import browser, watch  # noqa: F401  (fixtures)
from tests.test_ladder_e2e import workspace as ladder_workspace
from tests.test_status import PIPELINE, pipeline_recipe


def waiting_pipeline(client: httpx.Client) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = client.get("/api/pipelines").json()
        if rows and rows[0]["run_status"] == "waiting":
            return dict(rows[0])
        time.sleep(0.05)
    raise AssertionError("the pipeline's run never waited for a person")


def test_a_pipeline_waiting_for_a_person_then_answered_from_the_pipelines_view(
    tmp_path: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    ws = ladder_workspace(tmp_path, "ws")
    write_override(ws, f"{PIPELINE}.json", pipeline_recipe())
    with (
        live_server(ws) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        started = client.post(
            "/api/runs", json={"recipe_id": PIPELINE, "args": {"scene_number": 4}}
        )
        assert started.status_code == 201, started.text
        row = waiting_pipeline(client)
        target_id = row["target_id"]

        page = seen.open("/#/pipelines")
        listed = page.wait_for_selector(f'tr[data-target-id="{target_id}"][data-status="waiting"]')
        assert listed is not None
        cells = listed.eval_on_selector_all("td", "tds => tds.map(t => t.textContent)")
        assert cells[1].startswith(f'{PIPELINE} {{"scene_number":4}}')
        assert (cells[2], cells[3], cells[4]) == ("#1", "draft", "1")
        seen.shot("pipelines")

        page.click(f'tr[data-target-id="{target_id}"] a')
        page.wait_for_selector('#pipeline-blockers li[data-step-id="draft"]')
        assert page.text_content("#pipeline-iteration") == "#1"
        assert page.text_content("#pipeline-phase") == "draft"
        kinds = page.eval_on_selector_all(
            "#pipeline-escalations tbody tr", "rows => rows.map(r => r.dataset.kind)"
        )
        assert kinds == ["escalate", "consult", "triage", "human"]
        states = dict(
            page.eval_on_selector_all(
                "#pipeline-phases li", "ls => ls.map(l => [l.dataset.stepId, l.dataset.state])"
            )
        )
        assert states["discover"] == "done" and states["draft"] == "waiting"
        assert states["polish"] == "pending"
        issue_link = page.get_attribute("#pipeline-blockers a", "href")
        assert issue_link is not None and issue_link.startswith("#/issues/iss_")
        seen.shot("pipeline-waiting")

        # Answered over HTTP while the page is open: the page follows the run to its end.
        issue_id = issue_link.rsplit("/", 1)[-1]
        answered = client.post(
            f"/api/issues/{issue_id}/answer",
            json={"resolution": "Draft it plainly.", "model": "offline:offline-deterministic-1"},
        )
        assert answered.status_code == 200, answered.text
        page.wait_for_selector('#pipeline-history tr[data-number="1"][data-result="done"]')
        page.wait_for_selector("#pipeline-no-blockers")
        page.wait_for_selector('#pipeline-phases li[data-step-id="draft"][data-state="done"]')
        kinds = page.eval_on_selector_all(
            "#pipeline-escalations tbody tr", "rows => rows.map(r => r.dataset.kind)"
        )
        assert kinds[:5] == ["escalate", "consult", "triage", "human", "answered"]
        page.wait_for_selector('#pipeline-export[data-state="exported"]')
        seen.shot("pipeline-done")
        assert seen.problems == []
