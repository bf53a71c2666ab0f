"""Issue 30's leftovers in headless Chromium against a live server on 127.0.0.1: an analytics
chart draws the figure its report is named for and follows a time range; the audit view
moves step by step; the conference list is live."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.live import live_server, read_sse
from tests.test_dashboard import browser, start, watch  # noqa: F401  (fixtures)


def finish(client: httpx.Client, *tasks: str) -> list[str]:
    runs = [start(client, task=task) for task in tasks]
    for run_id in runs:
        read_sse(client, f"/api/runs/{run_id}/events")
        while client.get(f"/api/runs/{run_id}").json()["status"] == "running":
            time.sleep(0.05)
    return runs


def test_a_chart_draws_its_reports_figure_and_follows_the_time_range(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=60) as client,
        watch(base) as seen,
    ):
        finish(client, "Draft scene 4 from the outline", "Check consistency of scenes 1-3")
        expected = client.get("/api/analytics/reports/run_outcomes").json()
        figure = expected["columns"].index("failure_pct")
        page = seen.open("/#/analytics/run_outcomes")
        page.wait_for_selector("#report-chart rect.bar")
        # The failure rate, not the last numeric column (the average duration).
        assert page.text_content("#report-chart .chart-caption") == "failure_pct"
        assert page.get_attribute("#report-chart", "data-figure") == "failure_pct"
        values = page.eval_on_selector_all(
            "#report-chart rect.bar", "bars => bars.map(b => Number(b.dataset.value))"
        )
        assert values == [row[figure] for row in expected["rows"]]
        assert page.is_enabled("#report-since") and page.is_enabled("#report-until")
        assert page.text_content("label[for=report-since]") == "From"

        # A range after every run: no rows, no chart.
        page.fill("#report-since", "2999-01-01T00:00")
        page.wait_for_function(
            """() => {
                const meta = document.querySelector('#report-meta');
                return meta && meta.dataset.range.includes('since=2999')
                    && document.querySelectorAll('#report-table tbody tr').length === 0;
            }"""
        )
        assert page.query_selector("#report-chart") is None
        assert (page.text_content("#report-meta") or "").startswith("0 rows")

        # A range holding them all: the same bars as the whole history.
        page.fill("#report-since", "2000-01-01T00:00")
        page.wait_for_function(
            """(n) => {
                const meta = document.querySelector('#report-meta');
                return meta && meta.dataset.range.includes('since=2000')
                    && document.querySelectorAll('#report-chart rect.bar').length === n;
            }""",
            arg=len(expected["rows"]),
        )
        assert (
            page.eval_on_selector_all(
                "#report-chart rect.bar", "bars => bars.map(b => Number(b.dataset.value))"
            )
            == values
        )
        # The range stays while the user moves to another report, and is cleared at once.
        page.click('#report-list a:text-is("slowest_steps")')
        page.wait_for_function(
            """() => {
                const chart = document.querySelector('#report-chart');
                const meta = document.querySelector('#report-meta');
                return chart && chart.dataset.figure === 'p95_ms'
                    && meta.dataset.range.includes('since=2000');
            }"""
        )
        assert page.input_value("#report-since") == "2000-01-01T00:00"
        page.click("#report-range-clear")
        page.wait_for_function(
            "() => { const m = document.querySelector('#report-meta');"
            " return m && m.dataset.range === ''; }"
        )
        assert page.input_value("#report-since") == ""
        seen.shot("analytics-range")
        assert seen.problems == []


def test_the_audit_view_moves_step_by_step(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        (run_id,) = finish(client, "prose review")
        trail = client.get(f"/api/runs/{run_id}/audit").json()["events"]
        total = trail[0]["data"]["total_steps"]
        ends = [e for e in trail if e["type"] in ("StepCompleted", "StepFailed")]
        assert len(ends) >= 2
        first, second = ends[0], ends[1]
        with watch(base) as seen:
            page = seen.open(f"/#/runs/{run_id}")
            page.wait_for_function(
                "n => Number(document.querySelector('#audit-slider').max) === n",
                arg=trail[-1]["version"],
            )
            # At the last version there is no next step, and a previous one.
            page.wait_for_selector("#audit-prev-step:not([disabled])")
            assert page.is_disabled("#audit-next-step")
            page.eval_on_selector(
                "#audit-slider", "s => { s.value = '1'; s.dispatchEvent(new Event('input')); }"
            )
            page.wait_for_selector('#audit-view[data-version="1"]')
            assert page.is_disabled("#audit-prev-step")
            assert page.text_content("#audit-step-label") == "before the first step ended"

            page.focus("#audit-next-step")  # from the keyboard
            page.keyboard.press("Enter")
            page.wait_for_selector(f'#audit-view[data-version="{first["version"]}"]')
            instance = first["data"]["instance_id"] or first["data"]["step_id"]
            assert page.text_content("#audit-step-label") == (
                f"after step {first['data']['step_index'] + 1} of {total}: {instance}"
            )
            assert page.input_value("#audit-slider") == str(first["version"])
            assert (
                page.text_content("#audit-label") == f"{first['version']} of {trail[-1]['version']}"
            )
            # The view is the run as of that version: the first step done, the next not.
            state = client.get(f"/api/runs/{run_id}/audit", params={"at": first["version"]}).json()
            statuses = page.eval_on_selector_all(
                "#audit-view table.audit-steps tbody tr",
                "rows => rows.map(r => r.cells[2].textContent)",
            )
            assert statuses == [s["status"] for s in state["steps"]]
            assert statuses[0] == "done" and "done" not in statuses[1:]

            page.keyboard.press("Space")  # the button keeps the focus: the next step again
            page.wait_for_selector(f'#audit-view[data-version="{second["version"]}"]')
            assert (page.text_content("#audit-step-label") or "").startswith(
                f"after step {second['data']['step_index'] + 1} of {total}: "
            )
            page.click("#audit-prev-step")
            page.wait_for_selector(f'#audit-view[data-version="{first["version"]}"]')
            assert page.get_attribute("#audit-step-label", "data-version") == str(first["version"])
            seen.shot("audit-steps")
            assert seen.problems == []


def test_the_conference_list_is_live(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        page = seen.open("/#/conferences")
        page.wait_for_selector("#rounds")
        page.wait_for_selector('#connection[data-state="live"]')
        assert page.eval_on_selector_all("#rounds tbody tr", "rows => rows.length") == 0
        # A round asked elsewhere (the CLI, another tab) shows, and ends, without a reload.
        asked = client.post(
            "/api/conferences",
            json={"question": "Is Kael consistent with his canon card?", "roles": ["critic"]},
        )
        assert asked.status_code == 202, asked.text
        round_id = asked.json()["round_id"]
        page.wait_for_selector(f'#rounds tr[data-round-id="{round_id}"][data-status="closed"]')
        assert "1 accepted" in (page.text_content(f'#rounds tr[data-round-id="{round_id}"]') or "")
        assert seen.problems == []
