"""The dashboard end to end, in headless Chromium against a real server on 127.0.0.1.

Debian's `chromium` package is driven by Playwright with its executable path pointed at it
(Playwright's own browser download is never used). Without chromium these tests are skipped
on a developer's machine and fail in CI. Each main view is saved as a screenshot under
`tests/artifacts/`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.api.app import create_app
from controlroom.engine.context import Context
from tests.live import live_server, read_sse, serve_app
from tests.test_dashboard_http import change_one_byte

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - only without the dev extra
    if IN_CI:
        raise
    pytest.skip("playwright is not installed", allow_module_level=True)

if CHROMIUM is None:
    if IN_CI:
        raise RuntimeError("CI runs the browser tests: install Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)

#: Milliseconds each offline model call takes: slow enough to watch a run mid-way.
SLOW = "400"
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield launched
        launched.close()


class Watched:
    """A page with what it did recorded: its requests and any script error or CSP report."""

    def __init__(self, page: Page, base: str) -> None:
        self.page, self.base = page, base
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.problems: list[str] = []
        page.on("request", lambda r: self.requests.append((r.url, r.headers)))
        page.on("pageerror", lambda e: self.problems.append(str(e)))
        page.on(
            "console",
            lambda m: (
                self.problems.append(m.text) if m.type == "error" and "401" not in m.text else None
            ),
        )

    def open(self, path: str = "/") -> Page:
        self.page.goto(self.base + path)
        return self.page

    def __enter__(self) -> Watched:
        return self

    def __exit__(self, *exc: object) -> None:
        # Before the server stops: an open page would hold its live feeds open.
        self.page.context.close()

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


@pytest.fixture
def watch(browser: Browser) -> Any:
    def open_watched(base: str) -> Watched:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(WAIT_MS)
        return Watched(context.new_page(), base)

    return open_watched


def start(client: httpx.Client, **body: Any) -> str:
    response = client.post("/api/runs", json=body)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def test_the_runs_list_updates_while_a_run_executes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, watch: Any
) -> None:
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", SLOW)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        done = start(client, task="prose review")
        read_sse(client, f"/api/runs/{done}/events")
        with watch(base) as seen:
            page = seen.open("/")
            page.wait_for_selector(f'tr[data-run-id="{done}"][data-status="done"]')

            running = start(client, recipe_id="creative_draft_scene")  # while the page is open
            page.wait_for_selector(f'tr[data-run-id="{running}"][data-status="running"]')
            rows = page.eval_on_selector_all(
                "#runs tbody tr", "rows => rows.map(r => r.dataset.runId)"
            )
            assert rows == [running, done]  # newest first
            seen.shot("runs-list")
            page.wait_for_selector(f'tr[data-run-id="{running}"][data-status="done"]')
            assert page.eval_on_selector_all(
                "#runs tbody tr", "r => r.map(x => x.dataset.runId)"
            ) == [
                running,
                done,
            ]

            page.select_option("#filter-recipe", "analytical_prose")
            assert page.eval_on_selector_all("#runs tbody tr", "r => r.length") == 1
            page.select_option("#filter-recipe", "")
            page.fill("#filter-text", "no task says this")
            assert page.eval_on_selector_all("#runs tbody tr", "r => r.length") == 0
            assert seen.problems == []


@pytest.mark.timeout(120)
def test_a_run_started_from_the_page_shows_each_step_in_full_with_its_prompt(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, watch: Any
) -> None:
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", "150")
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        page = seen.open("/")
        page.wait_for_selector(
            '#start-recipe option[value="creative_draft_scene"]', state="attached"
        )
        page.select_option("#start-recipe", "creative_draft_scene")
        page.click("#start-button")
        page.wait_for_url("**/#/runs/run_*")
        run_id = page.url.rsplit("/", 1)[1]
        page.wait_for_selector('#run-header .badge[data-status="done"]')
        assert int(page.get_attribute("#view > .page", "data-partials") or "0") > 0  # it streamed

        page.click('li.step[data-instance="draft"]')
        page.wait_for_selector('#step-detail[data-instance="draft"]')
        draft = client.get(f"/api/runs/{run_id}/cache/draft").json()["text"]
        assert (
            page.inner_text("#step-output") == draft.strip()
            or page.text_content("#step-output") == draft
        )
        trail = client.get(f"/api/runs/{run_id}/audit").json()["events"]
        responded = next(
            e["data"]
            for e in trail
            if e["type"] == "AgentResponded" and e["data"]["step_id"] == "draft"
        )
        request = next(
            e["data"]
            for e in trail
            if e["type"] == "ModelRequestRecorded" and e["data"]["ref"] == responded["request_ref"]
        )
        # The event names its system text by hash; the page shows the request as sent.
        assert "content_sha256" in request["body"]["messages"][0]
        sent = client.get(f"/api/runs/{run_id}/requests/{request['ref']}").json()["body"]
        page.wait_for_function(
            "text => (document.querySelector('#step-prompt')?.textContent || '').includes(text)",
            arg=sent["messages"][0]["content"][:200],
        )
        prompt = page.text_content("#step-prompt") or ""
        for message in sent["messages"]:
            assert message["content"] in prompt
        usage = page.text_content("#step-usage") or ""
        assert str(responded["usage"]["output_tokens"]) in usage
        assert page.text_content("#dod-verdict") == "passed"
        seen.shot("run")

        page.click('li.step[data-instance="discover"]')
        page.wait_for_selector('#step-detail[data-instance="discover"]')
        receipt = page.text_content("#step-receipt") or ""
        assert "file_locator" in receipt and "rcpt_" in receipt
        assert "Story/SCN-outline.md" in (page.text_content("#step-output") or "")
        assert seen.problems == []


def test_cancel_from_the_page_stops_the_run(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, watch: Any
) -> None:
    # Slower than SLOW: the run must still be running after the confirmation.
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", "2000")
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = start(client, recipe_id="creative_draft_scene")
        with watch(base) as seen:
            page = seen.open(f"/#/runs/{run_id}")
            page.wait_for_selector('li.step[data-status="running"]')
            page.click("#cancel-run")  # asks first: nothing is cancelled yet
            page.wait_for_selector("#cancel-confirm")
            assert client.get(f"/api/runs/{run_id}").json()["status"] != "cancelled"
            page.click("#cancel-yes")
            page.wait_for_selector('#run-header .badge[data-status="cancelled"]')
            page.wait_for_selector('#timeline li.mark[data-type="RunCancelled"]')
            assert client.get(f"/api/runs/{run_id}").json()["status"] == "cancelled"
            assert page.query_selector("#cancel-run") is None
            assert seen.problems == []


class DropsTheFirstRunFeed:
    """A flaky network between page and server: the first live feed of a run is cut after a
    few messages (the server sees the client leave); later ones pass untouched."""

    def __init__(self, app: Any, after_chunks: int) -> None:
        self.app, self.after_chunks = app, after_chunks
        self.feeds: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (
            path.startswith("/api/runs/") and path.endswith("/events")
        ):
            await self.app(scope, receive, send)
            return
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.feeds.append(headers)
        if len(self.feeds) > 1:
            await self.app(scope, receive, send)
            return
        import anyio

        cut = anyio.Event()
        sent = 0

        async def cutting_send(message: Any) -> None:
            nonlocal sent
            if cut.is_set():
                return
            if message["type"] == "http.response.body":
                sent += 1
                if sent > self.after_chunks:
                    cut.set()
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
            await send(message)

        async def receive_until_cut() -> Any:
            async with anyio.create_task_group() as group:
                result: list[Any] = []

                async def wait_cut() -> None:
                    await cut.wait()
                    group.cancel_scope.cancel()

                async def wait_receive() -> None:
                    result.append(await receive())
                    group.cancel_scope.cancel()

                group.start_soon(wait_cut)
                group.start_soon(wait_receive)
            return result[0] if result else {"type": "http.disconnect"}

        await self.app(scope, receive_until_cut, cutting_send)


@pytest.mark.timeout(120)
def test_a_reconnecting_page_misses_no_event(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, watch: Any
) -> None:
    monkeypatch.setenv("CONTROLROOM_OFFLINE_LATENCY_MS", SLOW)
    ctx = Context.open(workspace)
    flaky = DropsTheFirstRunFeed(create_app(ctx), after_chunks=6)
    try:
        with serve_app(flaky) as base, httpx.Client(base_url=base, timeout=30) as client:
            run_id = start(client, recipe_id="creative_draft_scene")
            with watch(base) as seen:
                page = seen.open(f"/#/runs/{run_id}")
                page.wait_for_selector('#run-header .badge[data-status="done"]', timeout=60_000)
                trail = client.get(f"/api/runs/{run_id}/audit").json()["events"]
                page.click("#events-panel summary")  # its rows are built when it opens
                page.wait_for_function(
                    "n => document.querySelectorAll('#event-log tr').length >= n",
                    arg=len(trail),
                )
                versions = page.eval_on_selector_all(
                    "#event-log tr", "rows => rows.map(r => Number(r.dataset.version))"
                )
                assert versions == [e["version"] for e in trail]  # each once, in order
                assert len(flaky.feeds) >= 2
                assert "last-event-id" in flaky.feeds[1]  # it resumed, not restarted
                assert int(page.get_attribute("#view > .page", "data-connections") or "0") >= 2
    finally:
        ctx.close()


def test_the_verified_badge_turns_red_after_a_byte_of_the_store_changes(
    workspace: Path, watch: Any
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = start(client, task="prose review")
        read_sse(client, f"/api/runs/{run_id}/events")
        with watch(base) as seen:
            page = seen.open(f"/#/runs/{run_id}")
            page.wait_for_selector('#verified[data-verified="true"]')
            # The slider follows the last version until moved by hand, so it is moved only
            # once the page has every event; moved earlier, the next event takes it back.
            last = client.get(f"/api/runs/{run_id}/audit").json()["events"][-1]["version"]
            page.wait_for_function(
                "n => Number(document.querySelector('#audit-slider').max) === n", arg=last
            )
            page.eval_on_selector(
                "#audit-slider",
                "s => { s.value = '1'; s.dispatchEvent(new Event('input')); }",
            )
            page.wait_for_selector('#audit-view[data-version="1"]')
            assert "running" in (page.text_content("#audit-view") or "")
            seen.shot("audit")

            change_one_byte(workspace, run_id, version=2)
            page.click("#verify-again")
            page.wait_for_selector('#verified[data-verified="false"]')
            assert "v2 changed" in (page.text_content("#verified-box") or "")
            page.wait_for_selector("#run-header.tampered #header-tampered")  # not only below
            page.reload()
            page.wait_for_selector('#verified[data-verified="false"]')
            page.wait_for_selector("#run-header.tampered #header-tampered")
            seen.shot("tampered")


def test_with_a_token_the_page_asks_for_it_and_sends_it_on_every_call(
    workspace: Path, watch: Any
) -> None:
    with live_server(workspace, token="s3cret") as base, watch(base) as seen:
        page = seen.open("/")
        page.wait_for_selector("#token-form:not([hidden])")
        seen.shot("token")
        page.fill("#token-input", "wrong")
        page.click("#token-form button")
        page.wait_for_selector("#token-error:not([hidden])")
        page.fill("#token-input", "s3cret")
        page.click("#token-form button")
        page.wait_for_selector("#runs")
        page.wait_for_selector("#connection[data-state='live']")
        assert page.is_hidden("#token-form")
        assert "s3cret" not in page.content()

        api_calls = [(url, h) for url, h in seen.requests if "/api/" in url or "openapi" in url]
        authorized = [h.get("authorization") for _, h in api_calls[-3:]]
        assert authorized == ["Bearer s3cret"] * len(authorized) and authorized
        assert all(url.startswith(base) for url, _ in seen.requests)  # nothing from elsewhere


@pytest.mark.timeout(120)
def test_two_runs_compare_side_by_side_and_their_issues_show_in_full(
    workspace: Path, watch: Any
) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        first = start(client, task="consistency check")
        read_sse(client, f"/api/runs/{first}/events")
        second = start(client, task="consistency check")
        read_sse(client, f"/api/runs/{second}/events")
        with watch(base) as seen:
            page = seen.open(f"/#/runs/{second}")
            page.wait_for_selector(f'#compare-with option[value="{first}"]', state="attached")
            page.select_option("#compare-with", first)
            page.wait_for_selector("#diff-steps tbody tr")
            steps = client.get(f"/api/runs/{second}/steps").json()
            rows = page.eval_on_selector_all(
                "#diff-steps tbody tr", "r => r.map(x => x.dataset.row)"
            )
            assert rows == [s["instance_id"] for s in steps]
            assert page.text_content('#diff-outcome tr[data-row="status"]')
            seen.shot("diff")

            issue = client.get("/api/issues", params={"run_id": first}).json()[0]
            page.goto(f"{base}/#/issues")
            page.wait_for_selector(f'tr[data-issue-id="{issue["issue_id"]}"]')
            seen.shot("issues")
            page.click(f'tr[data-issue-id="{issue["issue_id"]}"] a')
            page.wait_for_selector("#issue-detail")
            assert page.text_content("#issue-detail") == issue["detail"]
            evidence = page.text_content("#issue-evidence") or ""
            assert json.loads(evidence) == issue["evidence"]
            seen.shot("issue")
            assert seen.problems == []


def test_a_failed_run_is_retried_from_a_step_on_the_page(workspace: Path, watch: Any) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        run_id = start(client, task="consistency check")  # its DoD fails on purpose
        read_sse(client, f"/api/runs/{run_id}/events")
        page = seen.open(f"/#/runs/{run_id}")
        page.wait_for_selector('#run-header .badge[data-status="failed"]')
        # Its Definition of Done failed, not a step: no "retry from the failed step", which
        # the server refuses (in the API's words), but a retry from a step the person picks.
        page.wait_for_selector('#run-failure-kind[data-kind="dod"]')
        assert page.query_selector("#retry-run") is None
        refused = client.post(f"/api/runs/{run_id}/retry", json={})
        assert refused.status_code == 400 and "--from" not in refused.text
        assert page.inner_text("#dod-verdict") == "failed"
        page.click('li.step[data-instance="review"]')
        page.click("#retry-from-step")
        page.wait_for_selector('#timeline li.mark[data-type="RunRetried"]')
        page.wait_for_selector('li.step[data-instance="review#2"]')
        # The retried run's own end, read from its stream: the header's badge alone could
        # still be the first failure's while the retried steps finish.
        read_sse(client, f"/api/runs/{run_id}/events")
        page.wait_for_selector('#run-header .badge[data-status="failed"]')
        retried = [e["type"] for e in client.get(f"/api/runs/{run_id}/audit").json()["events"]]
        assert retried.count("RunRetried") == 1

        # Opened afresh, the page folds the whole stream, not up to the first failure.
        page.goto(f"{base}/#/")
        page.goto(f"{base}/#/runs/{run_id}")
        page.wait_for_selector('li.step[data-instance="review#2"]')
        page.wait_for_selector('#run-header .badge[data-status="failed"]')
        page.click("#events-panel summary")
        # A function, not an expression string: the page's CSP forbids eval, which
        # Playwright's polling of a string predicate may need.
        page.wait_for_function(
            "(n) => document.querySelectorAll('#event-log tr').length === n", arg=len(retried)
        )
        page.click("#event-log tr:last-child details.raw summary")
        raw = json.loads(page.inner_text("#event-log tr:last-child pre.raw-json"))
        assert raw["type"] == retried[-1] and raw["version"] == len(retried)

        # Retried elsewhere (the CLI, another tab) while the page shows its ending: the page
        # learns it from the server's word on the run and follows the run again.
        again = client.post(f"/api/runs/{run_id}/retry", json={"from": "review"})
        assert again.status_code == 200, again.text
        page.wait_for_selector('li.step[data-instance="review#3"]', timeout=2 * WAIT_MS)
        assert seen.problems == []


def test_a_t1_agents_three_calls_show_on_its_step(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, watch: Any
) -> None:
    monkeypatch.setenv("CONTROLROOM_TIER", "t1")
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        run_id = start(client, recipe_id="creative_draft_scene", args={"scene_number": 4})
        page = seen.open(f"/#/runs/{run_id}")
        page.wait_for_selector('#run-header .badge[data-status="done"]')
        page.click('li.step[data-instance="brief"]')
        page.wait_for_selector('#step-micro li[data-micro="evidence"]')
        calls = page.eval_on_selector_all(
            "#step-micro li", "items => items.map(i => i.dataset.micro)"
        )
        assert calls == ["triage", "finding", "evidence"]
        micro = page.text_content("#step-micro") or ""
        assert "FOCUS:" in micro and "Evidence: slot:" in micro and "✓ verified" in micro
        seen.shot("t1-step")
        assert seen.problems == []


def as_text(value: Any) -> str:
    """A cell as the page writes it (JavaScript's String(): 100.0 is "100")."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_the_analytics_reports_show_as_tables_and_charts(workspace: Path, watch: Any) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=60) as client,
        watch(base) as seen,
    ):
        runs = [start(client, task="Draft scene 4 from the outline") for _ in range(2)]
        runs.append(start(client, task="Check consistency of scenes 1-3 against canon"))
        for run_id in runs:
            while client.get(f"/api/runs/{run_id}").json()["status"] == "running":
                time.sleep(0.05)
        page = seen.open("/#/analytics")
        page.wait_for_selector("#report-list a.active")
        names = page.eval_on_selector_all(
            "#report-list a", "links => links.map(a => a.textContent)"
        )
        assert "run_outcomes" in names and "slowest_steps" in names
        expected = client.get("/api/analytics/reports/run_outcomes").json()
        page.click('#report-list a:text-is("run_outcomes")')
        page.wait_for_url("**/#/analytics/run_outcomes")
        # The report shown first (another one's rows) is replaced when this one arrives:
        # wait for this report's columns and row count, not for any row.
        page.wait_for_function(
            """([columns, count]) => {
                const heads = [...document.querySelectorAll('#report-table thead th')];
                const rows = document.querySelectorAll('#report-table tbody tr');
                return heads.map((h) => h.textContent).join('|') === columns
                    && rows.length === count;
            }""",
            arg=["|".join(expected["columns"]), len(expected["rows"])],
        )
        cells = page.eval_on_selector_all(
            "#report-table tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        assert cells == [[as_text(v) for v in row] for row in expected["rows"]]
        bars = page.eval_on_selector_all("#report-chart rect.bar", "bars => bars.length")
        assert bars == len(expected["rows"]) > 0
        seen.shot("analytics")
        assert seen.problems == []


def test_typed_args_go_out_and_the_list_says_step_cost_and_failure_kind(
    workspace: Path, watch: Any
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        failed = start(client, task="consistency check")  # its DoD fails on purpose
        read_sse(client, f"/api/runs/{failed}/events")
        page = seen.open("/")
        page.wait_for_selector(f'tr[data-run-id="{failed}"] .failure-kind')
        assert page.inner_text(f'tr[data-run-id="{failed}"] .failure-kind') == "DoD failed"
        steps = page.inner_text(f'tr[data-run-id="{failed}"] td.step')
        done, total = steps.split()[0].split("/")
        assert int(done) == int(total) > 0  # every step ran; its Definition of Done failed
        assert "tok" in page.inner_text(f'tr[data-run-id="{failed}"] td.cost')

        # Sent as the CLI sends `--arg scene_number=2`: a number, shown before it goes (the
        # tool reads it: a string "2" was ignored, and every scene reviewed).
        page.select_option("#start-recipe", "analytical_prose")
        page.fill("#start-extra", "scene_number=2\nnote=nine")
        assert json.loads(page.inner_text("#start-args-preview")) == {
            "scene_number": 2,
            "note": "nine",
        }
        page.click("#start-button")
        page.wait_for_selector('#run-header .badge[data-status="done"]')
        run_id = page.evaluate("() => decodeURIComponent(location.hash.split('/').pop())")
        assert client.get(f"/api/runs/{run_id}/state").json()["args"] == {
            "scene_number": 2,
            "note": "nine",
        }
        assert page.inner_text("#run-args") == 'scene_number=2, note="nine"'
        page.wait_for_selector("#waterfall .bars li")

        # The list: sorted oldest first, then only the runs of a day with none.
        page.goto(f"{base}/#/")
        page.wait_for_selector(f'tr[data-run-id="{run_id}"]')
        page.select_option("#sort-runs", "oldest")
        order = page.eval_on_selector_all("#runs tbody tr", "r => r.map(x => x.dataset.runId)")
        assert order == [failed, run_id]
        page.fill("#filter-to", "2000-01-01")
        page.wait_for_function("document.querySelectorAll('#runs tbody tr').length === 0")
        assert page.inner_text("#page-label").startswith("page 1 of 1")
        assert seen.problems == []


def test_a_run_tree_shows_its_children_and_totals_and_links_both_ways(
    workspace: Path, watch: Any
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        run_id = start(client, recipe_id="chapter_revision", args={"scene_number": 1})
        read_sse(client, f"/api/runs/{run_id}/events")
        page = seen.open(f"/#/runs/{run_id}")
        page.wait_for_selector("#run-children li")
        children = page.query_selector_all("#run-children li")
        assert len(children) == 2
        assert "analytical_consistency" in children[0].inner_text()
        assert "SUCCESS" in children[0].inner_text()
        assert page.inner_text("#run-tree-totals").startswith("Tree: 3 runs, 1 level(s) below")
        child = children[0].get_attribute("data-run")
        page.click(f'#run-children li[data-run="{child}"] a')
        page.wait_for_selector("#run-parent")
        assert run_id in page.inner_text("#run-parent")
        assert seen.problems == []
