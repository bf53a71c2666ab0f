"""Every view at phone width with no sideways scroll, clean of serious and critical axe-core
violations, with a skip link; the run timeline worked from the keyboard. One browser for the
module, one server, one finished run; screenshots at phone and desktop width.

axe-core is the copy bundled in the `axe-playwright-python` wheel (the dev extra pins it),
evaluated in the page through the DevTools protocol: the page's content-security policy
admits no script but the server's own, and it stays on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live import live_server, read_sse
from tests.test_dashboard import ARTIFACTS, browser, start  # noqa: F401  (fixture)

try:
    import axe_playwright_python
except ImportError:  # pragma: no cover - only without the dev extra
    pytest.skip("axe-playwright-python is not installed", allow_module_level=True)

AXE = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 1000}


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical findings on the page as it stands."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes'][:3]]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def sideways(page: Any) -> int:
    """How far the page scrolls sideways, in CSS pixels (0: it fits)."""
    width: int = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return width


@pytest.mark.timeout(120)
def test_every_view_fits_a_phone_and_passes_axe(workspace: Path, browser: Any) -> None:  # noqa: F811
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = start(client, task="prose review")
        read_sse(client, f"/api/runs/{run_id}/events")
        other = start(client, task="consistency check")
        read_sse(client, f"/api/runs/{other}/events")
        views = {
            "runs": ("/#/", "#runs tbody tr"),
            "run": (f"/#/runs/{run_id}", '#run-header .badge[data-status="done"]'),
            "issues": ("/#/issues", "h1"),
            "plans": ("/#/plans", "h1"),
            "conferences": ("/#/conferences", "h1"),
            "pipelines": ("/#/pipelines", "h1"),
            "analytics": ("/#/analytics", "h1"),
            "diff": (f"/#/diff/{run_id}/{other}", "#diff-steps tbody tr"),
        }
        found: dict[str, Any] = {}
        for width_name, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
            context = browser.new_context(viewport=viewport)
            context.set_default_timeout(30_000)
            page = context.new_page()
            try:
                for name, (path, ready) in views.items():
                    page.goto(base + path)
                    page.wait_for_selector(ready)
                    page.wait_for_timeout(300)  # let a view's second read land
                    if name == "diff":  # with two texts side by side
                        page.click("#diff-slot-show")
                        page.wait_for_selector("#diff-text-summary")
                    if width_name == "phone":
                        found[f"{name} scrolls sideways by"] = sideways(page)
                    found[f"{name} at {width_name}"] = serious_violations(page)
                    if name in ("runs", "run"):
                        ARTIFACTS.mkdir(exist_ok=True)
                        shot = ARTIFACTS / f"dashboard-{name}-{width_name}.png"
                        page.screenshot(path=str(shot), full_page=True)
            finally:
                context.close()
        problems = {k: v for k, v in found.items() if v}
        assert not problems, json.dumps(problems, indent=1)


def test_the_run_page_is_worked_from_the_keyboard(workspace: Path, browser: Any) -> None:  # noqa: F811
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = start(client, task="prose review")
        read_sse(client, f"/api/runs/{run_id}/events")
        context = browser.new_context(viewport=DESKTOP)
        context.set_default_timeout(30_000)
        page = context.new_page()
        try:
            page.goto(f"{base}/#/runs/{run_id}")
            page.wait_for_selector('#run-header .badge[data-status="done"]')
            page.keyboard.press("Tab")  # the first stop is the skip link
            assert page.evaluate("() => document.activeElement.id") == "skip-link"
            page.keyboard.press("Enter")
            assert page.evaluate("() => document.activeElement.id") == "view"
            assert page.evaluate("() => location.hash") == f"#/runs/{run_id}"

            page.wait_for_selector("li.step")  # the timeline, from the run's own feed
            steps = page.eval_on_selector_all("li.step", "r => r.map(x => x.dataset.instance)")
            page.focus(f'li.step[data-instance="{steps[0]}"]')
            page.keyboard.press("Space")
            page.wait_for_selector(f'li.step.selected[data-instance="{steps[0]}"]')
            page.keyboard.press("ArrowDown")
            page.wait_for_selector(f'li.step.selected[data-instance="{steps[1]}"]')
            focused = page.evaluate("() => document.activeElement.dataset.instance")
            assert focused == steps[1]
            page.keyboard.press("End")
            page.wait_for_selector(f'li.step.selected[data-instance="{steps[-1]}"]')
        finally:
            context.close()
