"""Start-up: `controlroom --help` builds every command's parser without importing what only
a command's work needs, and `runs` / `show` read a views file at the log's head without the
engine (api/quick_reads.py), printing exactly what the full path prints."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import REPO, write_override
from tests.test_cli_e2e import CLI
from tests.test_ladder_e2e import LADDER

HEAVY = (
    "numpy",
    "blingfire",
    "psycopg",
    "cryptography",
    "duckdb",
    "pyarrow",
    "openai",
    "anthropic",
    "uvicorn",
    "sklearn",
    "scipy",
)
#: What the quick reads never need: the typed models and the event store.
ENGINE = ("pydantic", "eventsourcing")


def probe(*argv: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """Run the CLI in a fresh interpreter; its output, and which of HEAVY + ENGINE it
    imported."""
    code = f"""
import contextlib, io, json, sys
from controlroom.api.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main({list(argv)!r})
print(json.dumps([out.getvalue(), [m for m in {HEAVY + ENGINE!r} if m in sys.modules]]))
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    output, loaded = json.loads(result.stdout.splitlines()[-1])
    return output, set(loaded)


def test_help_imports_none_of_the_heavy_libraries() -> None:
    output, loaded = probe("--help")
    assert "controlroom" in output
    assert loaded == set()


@pytest.fixture
def ran(workspace: Path) -> tuple[Path, str]:
    done = subprocess.run(
        [CLI, "run", "structural_canon", "-w", str(workspace), "-q", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return workspace, json.loads(done.stdout)["run_id"]


def test_runs_and_show_at_the_head_read_the_views_alone_and_print_what_the_full_path_does(
    ran: tuple[Path, str],
) -> None:
    workspace, run_id = ran
    for command in (["runs"], ["runs", "--status", "done"], ["show", run_id]):
        argv = (*command, "-w", str(workspace))
        quick, loaded = probe(*argv)
        assert loaded == set(), command
        full, loaded = probe(*argv, env={"CONTROLROOM_QUICK_READS": "0"})
        assert "pydantic" in loaded
        assert quick == full and run_id in quick, command


def test_a_log_ahead_of_its_views_takes_the_full_path_and_shows_the_new_events(
    ran: tuple[Path, str],
) -> None:
    workspace, run_id = ran
    # The views lag behind the log (a run another process records, not yet caught up).
    views = workspace / ".control-room" / "views.sqlite"
    with closing(sqlite3.connect(views)) as conn:
        conn.execute("UPDATE projection_tracking SET position = 0 WHERE name = 'runs'")
        conn.execute("DELETE FROM runs")
        conn.commit()
    output, loaded = probe("show", run_id, "-w", str(workspace))
    assert "pydantic" in loaded and f"{run_id}  structural_canon  done" in output
    output, loaded = probe("runs", "-w", str(workspace))  # caught up by the full path
    assert loaded == set() and run_id in output


def test_a_workspace_with_recipes_of_its_own_takes_the_full_path_that_warns(
    ran: tuple[Path, str],
) -> None:
    workspace, _ = ran
    write_override(workspace, "broken.json", "{ not json")
    _, loaded = probe("runs", "-w", str(workspace))
    assert "pydantic" in loaded


def test_a_show_of_no_such_run_is_the_full_paths_error(ran: tuple[Path, str]) -> None:
    workspace, _ = ran
    result = subprocess.run(
        [CLI, "show", "run_nosuch", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 64 and "run_nosuch" in result.stderr


def test_a_run_waiting_on_its_ladder_and_a_failed_check_print_alike_on_both_paths(
    ran: tuple[Path, str],
) -> None:
    workspace, _ = ran
    (workspace / ".control-room" / "models.json").write_text(json.dumps(LADDER))
    for task in ("creative_draft_scene", "check consistency of the scenes"):
        subprocess.run(
            [CLI, "run", task, "--arg", "scene_number=4", "-w", str(workspace), "-q"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    runs, _ = probe("runs", "-w", str(workspace))
    shown = []
    for line in runs.splitlines():
        run_id = line.split()[0]
        quick, loaded = probe("show", run_id, "-w", str(workspace))
        full, _ = probe("show", run_id, "-w", str(workspace), env={"CONTROLROOM_QUICK_READS": "0"})
        assert loaded == set() and quick == full
        shown.append(quick)
    text = "\n".join(shown)
    assert "ladder escalate" in text and "waiting for a person (the author)" in text
    assert "DoD ✗" in text or "DoD ✓" in text


def test_recipes_of_its_own_checked_sound_are_read_quickly_until_they_change(
    ran: tuple[Path, str],
) -> None:
    workspace, run_id = ran
    recipe = json.loads((REPO / "recipes" / "structural_canon.json").read_text())
    path = write_override(workspace, "mine.json", json.dumps({**recipe, "recipe_id": "mine"}))
    _, loaded = probe("show", run_id, "-w", str(workspace))
    assert "pydantic" in loaded  # checked once, and found sound
    quick, loaded = probe("show", run_id, "-w", str(workspace))
    assert loaded == set() and run_id in quick
    path.write_text(path.read_text().replace('"mine"', '"mine2"'))
    _, loaded = probe("runs", "-w", str(workspace))
    assert "pydantic" in loaded  # changed: checked again
