"""End to end through the `controlroom` command, as a new user would use it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.bundled import BUNDLED_RECIPES
from tests.cli_zygote import forked_cli
from tests.conftest import APPENDIX_D_KEYS, NEEDS_SCENE_RECIPE, write_override

pytestmark = pytest.mark.e2e
CLI = str(Path(sys.executable).parent / "controlroom")
DRAFT = "Draft scene 4 from the outline"


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`controlroom ARGS` in a process of its own (forked from one that has imported the
    CLI already: tests/cli_zygote.py), with the test's environment and ENV."""
    full_env = {**os.environ, **(env or {})}
    forked = forked_cli()
    if forked is not None:
        return forked.run(CLI, list(args), full_env, timeout=timeout)
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=timeout, env=full_env, check=False
    )


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def completed_steps(workspace: Path) -> int:
    db = workspace / ".control-room" / "events.sqlite"
    if not db.exists():
        return 0
    with closing(sqlite3.connect(db)) as conn:
        try:
            row = conn.execute(
                "SELECT COUNT(*) FROM stored_events WHERE topic LIKE '%StepCompleted'"
            )
        except sqlite3.OperationalError:  # the writer has not created its table yet
            return 0
        return int(row.fetchone()[0])


def test_the_first_command_completes_a_durable_run(workspace: Path) -> None:
    result = cli("run", DRAFT, "--workspace", str(workspace))
    assert result.returncode == 0, result.stderr
    assert (workspace / ".control-room" / "events.sqlite").is_file()
    assert "[11/11] phase B · write_scene (write_file)" in result.stderr and "done" in result.stdout
    run_id = result.stdout.split(":")[0]

    view = as_json(cli("show", run_id, "-w", str(workspace), "--json"))
    assert set(view) >= APPENDIX_D_KEYS
    assert view["status"] == "done" and view["total_steps"] == 11
    assert view["task"] == {"description": DRAFT}
    assert view["steps"][0] == {
        "step_id": "discover",
        "phase": "a",
        "status": "done",
        "tool": "file_locator",
        "output_slot": "discovery",
        "output_preview": view["steps"][0]["output_preview"],
    }
    assert view["cache_summary"]["scene_brief"]["type"] == "artifact"
    assert view["cache_summary"]["discovery"]["type"] == "pointer"

    runs = as_json(cli("runs", "-w", str(workspace), "--json", "--status", "done"))
    assert [r["run_id"] for r in runs] == [run_id]
    events = as_json(cli("events", run_id, "-w", str(workspace), "--json"))
    assert events[0]["type"] == "RunStarted" and events[-1]["type"] == "RunCompleted"
    assert all(b["prev_hash"] == a["event_hash"] for a, b in zip(events, events[1:], strict=False))


def test_the_planted_problem_is_found_and_becomes_an_issue(workspace: Path) -> None:
    result = cli("run", "check consistency of the scenes against canon", "-w", str(workspace))
    assert result.returncode == 1
    assert "SCN-02-the-ambush.md:3: Kael's eyes are 'green' but canon says 'grey'" in result.stdout
    issues = as_json(cli("issues", "-w", str(workspace), "--json"))
    assert len(issues) == 1 and issues[0]["kind"] == "dod_failure"
    # named once: in the run's summary, with its findings, not also as the progress's last line
    shown = result.stdout + result.stderr
    assert shown.count(f"issue {issues[0]['issue_id']}:") == 1, shown


def test_route_and_recipes_commands(workspace: Path) -> None:
    routed = cli("route", "foreshadowing audit please", "-w", str(workspace), "--json")
    assert routed.returncode == 0 and as_json(routed)["recipe_id"] == "analytical_foreshadow"
    unroutable = cli("route", "bake bread", "-w", str(workspace))
    assert unroutable.returncode == 3 and "not routable" in unroutable.stdout
    listed = as_json(cli("recipes", "list", "-w", str(workspace), "--json"))
    assert len(listed) == BUNDLED_RECIPES
    assert cli("recipes", "validate", "-w", str(workspace)).returncode == 0
    shown = as_json(cli("recipes", "show", "structural_canon", "-w", str(workspace)))
    assert shown["recipe_id"] == "structural_canon"


def test_validating_a_bad_recipe_file_names_file_and_path(workspace: Path) -> None:
    bad = workspace / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "recipe_id": "bad",
                "phase_a": [{"step_id": "s", "tool": "nope", "args": {}, "output_slot": "x"}],
            }
        )
    )
    result = cli("recipes", "validate", str(bad), "-w", str(workspace))
    assert result.returncode == 64
    assert f"{bad}: $.phase_a[0].tool: unknown tool 'nope'" in result.stderr


def test_bad_input_gets_a_clear_error_and_loses_nothing(workspace: Path) -> None:
    ws = str(workspace)
    assert cli("run", "structural_canon", "-w", ws, "-q").returncode == 0
    before = as_json(cli("runs", "-w", ws, "--json"))

    unknown = cli("run", "creative_draft_scenee", "-w", ws)
    assert unknown.returncode == 64 and "unknown recipe 'creative_draft_scenee'" in unknown.stderr
    not_routable = cli("run", "bake some bread", "-w", ws)
    assert not_routable.returncode == 3 and "not routable" in not_routable.stderr
    bad_arg = cli("run", "structural_canon", "--arg", "novalue", "-w", ws)
    assert bad_arg.returncode == 64 and "KEY=VALUE" in bad_arg.stderr
    missing_ws = cli("runs", "-w", str(workspace / "nope"))
    assert missing_ws.returncode == 64 and "does not exist" in missing_ws.stderr
    no_run = cli("show", "run_missing", "-w", ws)
    assert no_run.returncode == 64 and "no run 'run_missing'" in no_run.stderr

    write_override(workspace, "needs.json", NEEDS_SCENE_RECIPE)
    missing = cli("run", "needs_scene", "-w", ws)
    assert missing.returncode == 64 and "needs args: scene_path" in missing.stderr
    escaping = cli("run", "needs_scene", "--arg", "scene_path=../../etc/passwd", "-w", ws)
    assert escaping.returncode == 1 and "'..'" in escaping.stdout

    path = write_override(workspace, "broken.json", "{ not json")
    malformed = cli("run", "structural_canon", "-w", ws)
    assert malformed.returncode == 64 and str(path) in malformed.stderr
    path.unlink()

    after = as_json(cli("runs", "-w", ws, "--json"))
    assert after[: len(before)] == before  # nothing recorded was lost or altered


def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_result(
    workspace: Path, tmp_path: Path
) -> None:
    reference_ws = tmp_path / "reference"
    reference_ws.mkdir()
    subprocess.run(["cp", "-r", f"{workspace}/.", str(reference_ws)], check=True)
    reference = cli("run", DRAFT, "-w", str(reference_ws), "--json", "-q")
    reference_slots = _slot_hashes(reference_ws, as_json(reference)["run_id"])

    process = start_slow_run(workspace, "-q")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    assert process.returncode == -signal.SIGKILL
    assert 4 <= completed_steps(workspace) < 11

    resumed = cli("resume", "-w", str(workspace))
    assert resumed.returncode == 0, resumed.stderr
    run_id = resumed.stdout.split(":")[0]
    events = as_json(cli("events", run_id, "-w", str(workspace), "--json"))
    completed = [e["data"]["step_index"] for e in events if e["type"] == "StepCompleted"]
    assert completed == list(range(11))  # each step exactly once
    assert _slot_hashes(workspace, run_id) == reference_slots


def test_ctrl_c_leaves_the_run_resumable_and_exits_20(workspace: Path) -> None:
    process = start_slow_run(workspace)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 20 and "resumable" in stderr
    running = as_json(cli("runs", "-w", str(workspace), "--json", "--status", "running"))
    assert len(running) == 1
    assert cli("resume", running[0]["run_id"], "-w", str(workspace), "-q").returncode == 0


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_slow_run(workspace: Path, *extra: str) -> subprocess.Popen[str]:
    """Start the draft run with a slow model and return once four steps are recorded."""
    # Slow enough that the run is still going when the signal comes, on a busy machine too.
    slow = {**os.environ, "CONTROLROOM_OFFLINE_LATENCY_MS": "600"}
    process = subprocess.Popen(
        [CLI, "run", DRAFT, "-w", str(workspace), *extra],
        env=slow,
        # As from a terminal: a test run started in the background inherits SIGINT ignored
        # (POSIX shells ignore it for asynchronous jobs), and so would the CLI.
        preexec_fn=_sigint_as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while completed_steps(workspace) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    return process


def _slot_hashes(workspace: Path, run_id: str) -> dict[str, str]:
    events = as_json(cli("events", run_id, "-w", str(workspace), "--json"))
    return {e["data"]["slot"]: e["data"]["sha256"] for e in events if e["type"] == "SlotWritten"}


def test_the_main_job_leaves_the_new_scene_file_and_says_where(workspace: Path) -> None:
    """What `bash scripts/demo` does, on a copy of the example."""
    result = cli("run", DRAFT, "--workspace", str(workspace))
    assert result.returncode == 0, result.stderr
    scene = workspace / "Story" / "Scenes" / "SCN-04-the-reckoning.md"
    assert scene.is_file()
    assert f"wrote {scene} ({scene.stat().st_size} bytes)" in result.stdout
    run_id = result.stdout.split(":")[0]
    assert f"controlroom slot {run_id} SLOT" in result.stderr
    where = cli("slot", run_id, "scene_file", "-w", str(workspace))
    assert (
        where.returncode == 0 and as_json(where)["path"] == "Story/Scenes/SCN-04-the-reckoning.md"
    )
    text = cli("slot", run_id, "edited_draft", "-w", str(workspace))
    assert text.returncode == 0 and text.stdout == scene.read_text()
    tool = cli("slot", run_id, "outline_beat", "-w", str(workspace))
    assert as_json(tool)["target"]["path"] == "Story/Scenes/SCN-04-the-reckoning.md"
    missing = cli("slot", run_id, "nope", "-w", str(workspace))
    assert missing.returncode == 64 and "its slots: discovery" in missing.stderr
    # Once more: the scene is written already, so the draft fails in phase A, before any
    # model call, naming the file, and the file is left as it was.
    before = scene.read_bytes()
    again = cli("run", DRAFT, "--workspace", str(workspace), "-q")
    assert again.returncode == 1
    assert "scene 4 is already written at 'Story/Scenes/SCN-04-the-reckoning.md'" in again.stdout
    assert scene.read_bytes() == before
    rerun_id = again.stdout.split(":")[0]
    events = as_json(cli("events", rerun_id, "-w", str(workspace), "--json"))
    assert not [e for e in events if e["type"] == "AgentResponded"]


def test_a_run_in_another_store_says_how_to_see_it_and_a_miss_names_the_store(
    workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere.sqlite"
    store = {"CONTROLROOM_STORE": f"sqlite://{other}"}
    ran = cli("run", "check consistency of the scenes", "-q", "-w", str(workspace), env=store)
    hint = next(line for line in ran.stderr.splitlines() if line.startswith("see it: "))
    command = hint.removeprefix("see it: ").split("  ·  ")[0]
    assert command.startswith(f"CONTROLROOM_STORE=sqlite://{other} controlroom show run_")
    # the printed command works from a shell without the variable
    shown = subprocess.run(
        command.replace("controlroom", CLI, 1),
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "CONTROLROOM_STORE"},
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    run_id = command.split()[3]
    missing = cli("show", run_id, "-w", str(workspace))  # the workspace's own file
    assert missing.returncode == 64
    own_file = workspace / ".control-room" / "events.sqlite"
    assert f"no run '{run_id}' in this store ({own_file})" in missing.stderr
