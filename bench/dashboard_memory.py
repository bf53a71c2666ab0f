"""The dashboard left open: does its memory hold steady while runs come and go?

    .venv/bin/python bench/dashboard_memory.py [--minutes 60] [--every 5] [--sample 60]

Serves a copy of the example workspace, opens the runs list in headless Chromium (Debian's
`chromium`, via Playwright) and keeps it open while a run starts every `--every` seconds and
executes in the server, so the page follows the live feed the whole time. Every `--sample`
seconds it forces a garbage collection in the page and prints the JavaScript heap in use,
the DOM node count and the event listeners. The list grows by one row per run by design, so
the figure to watch is the heap per row shown, and the heap over the final idle period
(no new runs) which must not climb. Needs the `playwright` package (dev extra).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import served

REPO = Path(__file__).resolve().parent.parent


def workspace(root: Path) -> Path:
    target = root / "novel"
    shutil.copytree(
        REPO / "examples" / "novel", target, ignore=shutil.ignore_patterns(".control-room")
    )
    recipes = target / ".control-room" / "recipes"
    recipes.mkdir(parents=True)
    steps = [
        {
            "step_id": f"s{i}",
            "tool": "file_locator",
            "args": {"search_criteria": "outline", "scan_mode": "FAST_SCAN", "max_results": 3},
            "output_slot": f"s{i}",
        }
        for i in range(5)
    ]
    (recipes / "five.json").write_text(json.dumps({"recipe_id": "five_steps", "phase_a": steps}))
    return target


def metrics(cdp: Any) -> dict[str, float]:
    cdp.send("HeapProfiler.collectGarbage")
    found = cdp.send("Performance.getMetrics")["metrics"]
    return {m["name"]: m["value"] for m in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between new runs")
    parser.add_argument("--sample", type=float, default=60.0, help="seconds between samples")
    ns = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("needs Debian's chromium package")
    # The last fifth of the time no run starts: an idle page must not grow at all.
    busy_until = ns.minutes * 60 * 0.8
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        with (
            served(workspace(Path(tmp)), execute=True) as base,
            # Idle connections are dropped before the server's 5 s keep-alive ends them: a
            # run every 5 s would otherwise race the server closing the connection.
            httpx.Client(
                base_url=base, timeout=60, limits=httpx.Limits(keepalive_expiry=1.0)
            ) as client,
        ):
            page.goto(f"{base}/")
            page.wait_for_selector("#runs")
            started = time.monotonic()
            next_run = next_sample = started
            samples: list[tuple[float, int, dict[str, float]]] = []
            runs = 0
            print("minute  runs  rows  heap MB  DOM nodes  listeners", flush=True)
            while (now := time.monotonic()) - started < ns.minutes * 60:
                if now >= next_run and now - started < busy_until:
                    client.post("/api/runs", json={"recipe_id": "five_steps"}).raise_for_status()
                    runs += 1
                    next_run += ns.every
                if now >= next_sample:
                    m = metrics(cdp)
                    rows = page.evaluate("document.querySelectorAll('#runs tbody tr').length")
                    samples.append((now - started, rows, m))
                    print(
                        f"{(now - started) / 60:6.1f} {runs:5d} {rows:5d} "
                        f"{m['JSHeapUsedSize'] / 2**20:8.2f} {m['Nodes']:10.0f} "
                        f"{m['JSEventListeners']:10.0f}",
                        flush=True,
                    )
                    next_sample += ns.sample
                time.sleep(0.05)
            page.goto("about:blank")  # close the live feed before the server stops
        browser.close()
    report(samples, busy_until)


def report(samples: list[tuple[float, int, dict[str, float]]], busy_until: float) -> None:
    if len(samples) < 3:
        print("too few samples for a verdict: run longer")
        return
    first, last = samples[1], samples[-1]  # the first sample is before any run
    heap = [s[2]["JSHeapUsedSize"] for s in samples]
    per_row = [(s[2]["JSHeapUsedSize"] - heap[0]) / s[1] for s in samples[1:] if s[1]]
    idle = [s for s in samples if s[0] >= busy_until]
    end = last[2]["JSHeapUsedSize"] / 2**20
    print(f"heap: {heap[0] / 2**20:.2f} MB at the start, {end:.2f} MB at the end")
    print(
        f"heap per row shown: {per_row[0] / 1024:.1f} KiB after {first[1]} rows, "
        f"{per_row[-1] / 1024:.1f} KiB after {last[1]} rows (steady if these stay close)"
    )
    if len(idle) >= 2:
        growth = (idle[-1][2]["JSHeapUsedSize"] - idle[0][2]["JSHeapUsedSize"]) / 2**20
        print(f"idle period ({len(idle)} samples, no new runs): heap changed by {growth:+.2f} MB")


if __name__ == "__main__":
    main()
