"""The dashboard in headless Chromium: how long the run page of a 100-step run takes to
render, and how long a filter takes to apply to a list of 1,000 runs.

Targets (issue 15): the run page of a 100-step run in under 300 ms; a filter over 1,000
runs in under 100 ms. Needs Debian's `chromium` and the `playwright` package (dev extra).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from playwright.sync_api import sync_playwright

from controlroom.api.app import create_app
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService

REPO = Path(__file__).resolve().parent.parent
STEPS = 100
RUNS = 1000
REPEATS = 5


def step(i: int) -> dict[str, Any]:
    return {
        "step_id": f"s{i:03d}",
        "tool": "file_locator",
        "args": {"search_criteria": "outline", "scan_mode": "FAST_SCAN", "max_results": 3},
        "output_slot": f"s{i:03d}",
    }


@contextmanager
def served(workspace: Path, *, execute: bool) -> Iterator[str]:
    ctx = Context.open(workspace)
    config = uvicorn.Config(
        create_app(ctx, execute=execute), host="127.0.0.1", port=0, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        ctx.close()


def workspace(root: Path, name: str) -> Path:
    target = root / name
    shutil.copytree(
        REPO / "examples" / "novel", target, ignore=shutil.ignore_patterns(".control-room")
    )
    recipes = target / ".control-room" / "recipes"
    recipes.mkdir(parents=True)
    recipe = {"recipe_id": "hundred_steps", "phase_a": [step(i) for i in range(STEPS)]}
    (recipes / "hundred.json").write_text(json.dumps(recipe))
    (recipes / "one.json").write_text(json.dumps({"recipe_id": "one_step", "phase_a": [step(0)]}))
    return target


def main() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("needs Debian's chromium package")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})

        with served(workspace(Path(tmp), "steps"), execute=True) as base:
            with httpx.Client(base_url=base, timeout=60) as client:
                run_id = client.post("/api/runs", json={"recipe_id": "hundred_steps"}).json()[
                    "run_id"
                ]
                while client.get(f"/api/runs/{run_id}").json()["status"] != "done":
                    time.sleep(0.1)
            renders = []
            for _ in range(REPEATS):
                page.goto(f"{base}/#/runs/{run_id}")
                page.wait_for_function(
                    "n => document.querySelectorAll('#timeline li.step').length === n"
                    " && document.querySelector('#run-header [data-status=done]') !== null",
                    arg=STEPS,
                    polling="raf",
                )
                renders.append(page.evaluate("performance.now()"))
                page.goto("about:blank")
            print(
                f"run page, {STEPS} steps: median {statistics.median(renders):.0f} ms "
                f"from navigation to the full timeline (target < 300 ms)"
            )

        ws = workspace(Path(tmp), "runs")
        ctx = Context.open(ws)
        service = RunService(ctx)
        for _ in range(RUNS):
            service.start(RunRequest("one_step", {}))  # recorded, not executed
        ctx.close()
        with served(ws, execute=False) as base:
            page.goto(f"{base}/")
            # The list shows a page of 50 rows and counts every run it filters.
            page.wait_for_function(
                "n => (document.querySelector('#run-count')?.textContent ?? '')"
                ".startsWith(`${n} of ${n}`) && document.querySelectorAll('#runs tbody tr').length"
                " === Math.min(n, 50)",
                arg=RUNS,
                polling="raf",
            )
            timings = []
            complete = []
            for text in ["run_0", "zzz", "", "outline", ""] * 2:
                first, whole = page.evaluate(
                    """async text => {
                      const start = performance.now();
                      const box = document.querySelector('#filter-text');
                      box.value = text;
                      box.dispatchEvent(new Event('input'));
                      document.body.offsetHeight;  // include the layout it causes
                      const first = performance.now() - start;
                      // The list shows a page of at most 50 of the runs it counts: wait
                      // for that page's rows.
                      const wanted = Math.min(50, Number(document.querySelector('#run-count')
                        ?.textContent.split(' ')[0] ?? 0));
                      while (document.querySelectorAll('#runs tbody tr').length < wanted)
                        await new Promise(requestAnimationFrame);
                      return [first, performance.now() - start];
                    }""",
                    text,
                )
                timings.append(first)
                complete.append(whole)
            print(
                f"runs list, {RUNS} runs: a filter applies in median "
                f"{statistics.median(timings):.1f} ms, max {max(timings):.1f} ms "
                "(target < 100 ms); "
                f"every matching row in place in median {statistics.median(complete):.1f} ms, "
                f"max {max(complete):.1f} ms"
            )
            page.goto("about:blank")
        browser.close()


if __name__ == "__main__":
    main()
