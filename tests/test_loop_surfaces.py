"""An adaptive loop's turns wherever a run is read (issue 27, item 9): `controlroom show`
(text and `--json`), the dashboard's `/state` and its "Loop turns" panel, the run's SSE
feed, and the analytics' `loop_turns` view with the `loops` and `loop_steps` reports.

Real runs of `loop_style_tune_up` through the CLI: one that stabilizes (its gate fails
once, the revision goes back, the gate passes), one whose Showrunner answers prose (the
offline provider's `prose` fault: every decide step fails its contract and the typical flow
chooses), and one capped by a workspace override of the recipe (`max_iterations` 3).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLE, REPO, write_override
from tests.live import live_server, read_sse
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e

RECIPE = "loop_style_tune_up"
#: The Showrunner's every reply is prose: no contract is met, each turn falls back.
BABBLING_SHOWRUNNER = {
    "providers": {"offline": {"type": "offline", "faults": {"babbler": {"fault": "prose"}}}},
    "roles": {"showrunner": {"provider": "offline", "model": "babbler"}},
}
CRITERIA = (
    "required_steps_ran",
    "gate_passed:style_gate",
    "no_blocking_findings:style_gate_report",
)


def fresh(tmp_path: Path, name: str = "novel") -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".control-room", "SCN-04-*"))
    return target


def run_loop(workspace: Path, exit_code: int = 0) -> str:
    """Run the loop through the CLI; its run id."""
    before = {r["run_id"] for r in runs(workspace)}
    result = cli("run", RECIPE, "-w", str(workspace))
    assert result.returncode == exit_code, result.stdout + result.stderr
    (new,) = {r["run_id"] for r in runs(workspace)} - before
    return new


def runs(workspace: Path) -> list[dict[str, Any]]:
    if not (workspace / ".control-room" / "events.sqlite").exists():
        return []
    listed = cli("runs", "-w", str(workspace), "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


def babbling(workspace: Path) -> None:
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(BABBLING_SHOWRUNNER))


def capped_at(workspace: Path, iterations: int) -> None:
    recipe = json.loads((REPO / "recipes" / f"{RECIPE}.json").read_text())
    recipe["loop"]["caps"]["max_iterations"] = iterations
    write_override(workspace, f"{RECIPE}.json", json.dumps(recipe))


def show(workspace: Path, run_id: str, *more: str, quick: bool = True) -> str:
    env = {} if quick else {"CONTROLROOM_QUICK_READS": "0"}
    result = cli("show", run_id, "-w", str(workspace), *more, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.timeout(120)
def test_show_lists_each_turn_with_its_criteria_choice_and_reason_and_the_ending(
    tmp_path: Path,
) -> None:
    workspace = fresh(tmp_path)
    run_id = run_loop(workspace)

    text = show(workspace, run_id)
    lines = text.splitlines()
    start = lines.index("loop style_tune_up: 5 turn(s)")
    # The quick read (the views file as stored) and the full path print the same turns.
    full = show(workspace, run_id, quick=False).splitlines()
    assert full[full.index(lines[start]) :][:7] == lines[start : start + 7]
    turns = lines[start + 1 : start + 6]
    assert turns[0] == (
        "  turn 1  iteration 0  criteria 0/3 (not: " + ", ".join(CRITERIA) + ")"
        "  among tone_survey  → tone_survey (recommended role): the typical flow"
    )
    # After the gate failed: one criterion holds, the two gate criteria fail, and the
    # Showrunner sends the revision back.
    assert turns[3] == (
        "  turn 4  iteration 3  criteria 1/3 (not: gate_passed:style_gate, "
        "no_blocking_findings:style_gate_report)  among tone_survey, revise_prose, style_gate"
        "  → revise_prose (recommended role): the gate failed: back to revise_prose"
    )
    assert lines[start + 6] == (
        "  ended STABLE at turn 6 after 5 step(s), criteria 3/3 (all hold): "
        "stable after 5 step(s): every criterion holds"
    )

    loop = json.loads(show(workspace, run_id, "--json"))["loop"]
    assert loop["name"] == "style_tune_up"
    assert [t["choice"] for t in loop["turns"]] == [
        "tone_survey", "revise_prose", "style_gate", "revise_prose", "style_gate",
    ]  # fmt: skip
    assert [t["held"] for t in loop["turns"]] == [0, 0, 0, 1, 1]
    assert [t["instance_id"] for t in loop["turns"]][3] == "revise_prose#2"
    assert loop["turns"][3]["criteria"] == dict(zip(CRITERIA, [True, False, False], strict=True))
    assert not any(t["fallback"] for t in loop["turns"])
    assert loop["ending"]["ending"] == "stable" and loop["ending"]["held"] == 3


@pytest.mark.timeout(120)
def test_show_marks_a_fallback_with_the_showrunners_errors(tmp_path: Path) -> None:
    workspace = fresh(tmp_path)
    babbling(workspace)
    run_id = run_loop(workspace)

    text = show(workspace, run_id)
    (first,) = [line for line in text.splitlines() if line.startswith("  turn 1 ")]
    assert "FALLBACK → tone_survey (Showrunner: AgentOutputInvalidError: STOP_HOOK" in first
    loop = json.loads(show(workspace, run_id, "--json"))["loop"]
    assert all(t["fallback"] for t in loop["turns"]) and len(loop["turns"]) == 5
    assert all("showrunner_turn" in t["errors"][0] for t in loop["turns"])
    assert loop["turns"][0]["reason"] == "fallback to the typical flow: 'tone_survey'"
    assert loop["ending"]["ending"] == "stable"


@pytest.mark.timeout(120)
def test_the_dashboard_state_and_the_sse_feed_carry_the_loop_turns(tmp_path: Path) -> None:
    workspace = fresh(tmp_path)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        started = client.post("/api/runs", json={"task": "style loop"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        # The run's feed ends after its final event (and read_sse stops at 10 000 messages).
        messages = read_sse(client, f"/api/runs/{run_id}/events")
        assert messages[-1]["event"] == "RunCompleted"
        loops = [m["data"]["data"]["loop"] for m in messages if m["event"] == "FlowDecided"]
        loops = [loop for loop in loops if loop]
        assert [loop["kind"] for loop in loops] == ["turn", "choice"] * 5 + ["end"]
        assert loops[0]["criteria"] == dict.fromkeys(CRITERIA, False)
        assert loops[7]["choice"] == "revise_prose" and loops[7]["fallback"] is False
        assert loops[-1]["ending"] == "stable"

        state = client.get(f"/api/runs/{run_id}/state").json()
        assert state["loop"]["name"] == "style_tune_up"
        assert [t["turn"] for t in state["loop"]["turns"]] == [1, 2, 3, 4, 5]
        assert state["loop"]["turns"][3]["reason"] == "the gate failed: back to revise_prose"
        assert state["loop"]["ending"]["ending"] == "stable"
        detail = client.get(f"/api/runs/{run_id}").json()
        assert detail["loop"] == state["loop"]  # one shape: `LoopView`

        plain = client.post("/api/runs", json={"task": "prose review"}).json()["run_id"]
        read_sse(client, f"/api/runs/{plain}/events")
        assert client.get(f"/api/runs/{plain}/state").json()["loop"] is None
        assert "loop" not in client.get(f"/api/runs/{plain}").json()


@pytest.mark.timeout(180)
def test_the_run_page_shows_a_loop_turns_panel(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    if chromium is None:
        pytest.skip("chromium is not installed")
    from tests.test_dashboard_a11y import serious_violations

    workspace = fresh(tmp_path)
    babbling(workspace)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        run_id = client.post("/api/runs", json={"task": "style loop"}).json()["run_id"]
        read_sse(client, f"/api/runs/{run_id}/events")
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                page = browser.new_page(viewport={"width": 390, "height": 844})
                page.set_default_timeout(30_000)
                problems: list[str] = []
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                page.goto(f"{base}/#/runs/{run_id}")
                page.wait_for_selector('#loop-turns[data-ending="stable"]')
                items = page.locator("#loop-turns li")
                assert items.count() == 5
                first = items.nth(0).inner_text()
                assert "Turn 1 · iteration 0 · 0 of 3 criteria hold" in first
                assert "FALLBACK tone_survey" in first and "showrunner_turn" in first
                assert items.nth(0).get_attribute("data-fallback") == "true"
                assert "Ended stable at turn 6" in page.locator("#loop-ending").inner_text()
                assert page.locator("#loop-section").is_visible()
                assert serious_violations(page) == []
                width = page.evaluate(
                    "() => document.documentElement.scrollWidth"
                    " - document.documentElement.clientWidth"
                )
                assert width == 0
                assert problems == []
            finally:
                browser.close()


@pytest.mark.timeout(240)
def test_the_analytics_report_turns_stabilization_and_fallback_rates(tmp_path: Path) -> None:
    workspace = fresh(tmp_path)
    stable = run_loop(workspace)
    babbling(workspace)
    fell_back = run_loop(workspace)
    (workspace / ".control-room" / "models.json").unlink()
    capped_at(workspace, 3)
    capped = run_loop(workspace, exit_code=1)  # capped before its gate passed: its DoD fails

    def report(name: str) -> list[dict[str, Any]]:
        result = cli("analytics", "report", name, "-w", str(workspace), "--json")
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout)
        return [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]

    (loops,) = report("loops")
    assert loops["loop_name"] == "style_tune_up" and loops["recipe_id"] == RECIPE
    assert loops["runs"] == 3
    assert loops["turns"] == 5 + 5 + 3 and loops["turns_per_run"] == 4.33
    assert (loops["ended"], loops["stable"], loops["capped"]) == (3, 2, 1)
    assert loops["stabilization_pct"] == 66.7
    assert (loops["choices"], loops["fallbacks"]) == (13, 5)
    assert loops["fallback_pct"] == 38.5

    steps = {row["step_id"]: row for row in report("loop_steps")}
    assert steps["revise_prose"]["chosen"] == 2 + 2 + 1
    assert steps["revise_prose"]["repeats"] == 2 and steps["revise_prose"]["most_in_a_run"] == 2
    assert steps["tone_survey"]["repeats"] == 0
    assert steps["style_gate"]["by_fallback"] == 2

    query = cli(
        "analytics",
        "SELECT run_id, kind, ending, held FROM loop_turns WHERE kind = 'end' ORDER BY position",
        "-w",
        str(workspace),
        "--json",
    )
    ended = json.loads(query.stdout)["rows"]
    assert ended == [[stable, "end", "stable", 3], [fell_back, "end", "stable", 3],
                     [capped, "end", "capped", 1]]  # fmt: skip
