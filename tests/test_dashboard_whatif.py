"""What if, on the dashboard (issue 31; issue 30's full-text diff): fork a run from a step's
view with a new template, follow the fork, see its lineage, and compare the two runs step by
step (request and output diffs, cost) and slot by slot in full, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.prompts.registry import BUNDLED_DIR
from tests.live import live_server, read_sse
from tests.test_cli_e2e import cli
from tests.test_dashboard import browser, start, watch  # noqa: F401  (fixtures)

ADDED = "Keep every sentence the author wrote in the first person."


def recorded_draft(workspace: Path) -> str:
    ran = cli("run", "creative_draft_scene", "-w", str(workspace), "--json", "-q")
    assert ran.returncode == 0, ran.stderr
    for scene in (workspace / "Story" / "Scenes").glob("SCN-04-*"):
        scene.unlink()  # the source wrote it: the fork's write needs the path free
    run_id: str = json.loads(ran.stdout)["run_id"]
    return run_id


@pytest.mark.timeout(120)
def test_a_run_is_forked_from_a_step_on_the_page_and_compared_with_its_source(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    source = recorded_draft(workspace)
    template = (BUNDLED_DIR / "templates" / "polish_draft.t3.md").read_text() + f"\n{ADDED}\n"
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        page = seen.open(f"/#/runs/{source}")
        page.wait_for_selector('#run-header .badge[data-status="done"]')
        page.click('li.step[data-instance="polish"]')
        page.click("#fork-from-step")
        assert page.input_value("#fork-prompt-type") == "polish_draft"

        # A model not given as provider:model is refused on the page, before any request.
        page.fill("#fork-model", "gpt-4o")
        page.click("#fork-submit")
        page.wait_for_selector("#fork-error .error")
        assert "provider:model" in page.inner_text("#fork-error")
        assert [r for r, _ in seen.requests if r.endswith("/fork")] == []

        page.fill("#fork-model", "")
        page.fill("#fork-prompt-text", template)
        page.click("#fork-submit")
        page.wait_for_function(
            "(source) => location.hash.startsWith('#/runs/') && !location.hash.endsWith(source)",
            arg=source,
        )
        fork_id = page.evaluate("() => decodeURIComponent(location.hash.slice('#/runs/'.length))")
        read_sse(client, f"/api/runs/{fork_id}/events")
        page.wait_for_selector('#run-header .badge[data-status="done"]')
        page.wait_for_selector("#run-forked-from")
        assert source in page.inner_text("#run-forked-from")
        assert "polish" in page.inner_text("#run-forked-from")
        forked = client.get(f"/api/runs/{fork_id}").json()
        assert forked["forked_from"] == {"run_id": source, "step": "polish"}

        # The source lists its fork, with a link that compares the two.
        page.goto(f"{base}/#/runs/{source}")
        page.wait_for_selector(f'#run-forks li[data-run="{fork_id}"]')
        family = client.get(f"/api/runs/{source}/state").json()["family"]
        assert family["runs"] == 2 and family["root_run_id"] == source
        assert page.inner_text("#run-family-totals").startswith("Fork family: 2 runs, $")
        page.click(f'#run-forks li[data-run="{fork_id}"] a.compare')
        page.wait_for_selector("#diff-steps tbody tr")
        diff = client.get(f"/api/runs/{source}/diff/{fork_id}").json()
        rows = page.eval_on_selector_all("#diff-steps tbody tr", "r => r.map(x => x.dataset.row)")
        assert rows == [s["step"] for s in diff["steps"]]
        assert "differs" in (page.get_attribute('#diff-steps tr[data-row="polish"]', "class") or "")
        assert "same" in (page.get_attribute('#diff-steps tr[data-row="draft"]', "class") or "")
        page.click('#diff-steps tr[data-row="polish"] details.request-diff summary')
        request_diff = page.inner_text('#diff-steps tr[data-row="polish"] details.request-diff pre')
        assert f"+{ADDED}" in request_diff.splitlines()
        added = page.eval_on_selector_all(
            '#diff-steps tr[data-row="polish"] details.request-diff pre span.added',
            "spans => spans.map(s => s.textContent.trim())",
        )
        assert f"+{ADDED}" in added
        cost = page.inner_text('#diff-outcome tr[data-row="cost"]')
        assert f"${diff['totals']['a']['cost_usd']:.6f}" in cost

        # Two slots in full, side by side: the polished drafts differ line by line.
        page.select_option("#diff-slot-a", "edited_draft")
        page.select_option("#diff-slot-b", "edited_draft")
        page.click("#diff-slot-show")
        page.wait_for_selector("#diff-text-table tbody tr")
        left = client.get(f"/api/runs/{source}/cache/edited_draft").json()["text"]
        right = client.get(f"/api/runs/{fork_id}/cache/edited_draft").json()["text"]
        kinds = page.eval_on_selector_all(
            "#diff-text-table tbody tr", "rows => rows.map(r => r.className)"
        )
        shown_left = page.eval_on_selector_all(
            "#diff-text-table tbody tr",
            "rows => rows.filter(r => r.className !== 'added').map(r => r.children[1].textContent)",
        )
        assert shown_left == left.split("\n")  # every line of A, in order, none lost
        assert "same" in kinds
        assert (kinds.count("same") < len(kinds)) == (left != right)
        seen.shot("whatif-diff")
        assert seen.problems == []


def two_finished_runs(client: httpx.Client) -> tuple[str, str]:
    """Two runs of different recipes, each followed to its end."""
    first = start(client, task="consistency check")
    read_sse(client, f"/api/runs/{first}/events")
    other = start(client, task="prose review")
    read_sse(client, f"/api/runs/{other}/events")
    return first, other


@pytest.mark.timeout(120)
def test_any_two_runs_compare_by_id_with_their_texts_in_full(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        first, other = two_finished_runs(client)
        page = seen.open(f"/#/runs/{first}")
        page.wait_for_selector("#compare-id")
        page.fill("#compare-id", other)
        page.press("#compare-id", "Enter")
        page.wait_for_function("(id) => location.hash === `#/diff/${id}`", arg=f"{first}/{other}")
        # The comparison, or the error the page shows instead (named in the failure).
        page.wait_for_selector("#diff-steps tbody tr, #view .error")
        assert page.query_selector("#view .error") is None, page.inner_text("#view .error")
        assert page.query_selector("#diff-recipes-differ") is not None
        names = page.eval_on_selector_all(
            "#diff-slot-b option", "options => options.map(o => o.value)"
        )
        slots = client.get(f"/api/runs/{other}").json()["cache_summary"]
        assert names == list(slots)
        page.click("#diff-slot-show")
        page.wait_for_selector("#diff-text-summary")
        assert page.query_selector("#diff-text-table") is not None
        assert seen.problems == []


@pytest.mark.timeout(120)
def test_a_run_id_being_typed_keeps_its_focus_when_the_run_state_arrives(
    workspace: Path,
    watch: Any,  # noqa: F811  (the fixture imported above)
) -> None:
    # CI once lost this race: the page's state arrived between typing an id and pressing
    # Enter, the header's buttons were rebuilt, and the compare box lost its focus.
    # Holding the state response until the id is typed makes the order certain.
    with (
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
        watch(base) as seen,
    ):
        first, other = two_finished_runs(client)
        held: list[Any] = []
        seen.page.route("**/api/runs/*/state", lambda route: held.append(route))
        page = seen.open(f"/#/runs/{first}")
        page.wait_for_selector("#compare-id")
        for _ in range(600):  # the page asks for its state soon after it shows the box
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the page never asked for the run's state"
        page.focus("#compare-id")
        page.keyboard.type(other)
        for route in held:
            route.continue_()
        seen.page.unroute("**/api/runs/*/state")
        page.wait_for_selector("#run-facts h1 .badge:not([data-status='loading'])")
        assert page.evaluate("() => document.activeElement && document.activeElement.id") == (
            "compare-id"
        )
        page.keyboard.press("Enter")
        page.wait_for_function("(id) => location.hash === `#/diff/${id}`", arg=f"{first}/{other}")
        assert seen.problems == []
