"""`controlroom runs` and `controlroom show RUN` answered from the views file alone, when it
can be read as it is: a person's two most frequent commands start in tens of milliseconds
instead of loading the engine (pydantic, the event store, the recipe catalog).

The views file is read as it is only when nothing is to be caught up or checked: the store is
a SQLite file (the default), the views file is at this release's layout and runs version,
the runs view has read every event the log holds (its position is the log's head), and the
workspace's own recipe files, if any, are as a full check last found them sound (every
reading command warns about broken ones: api/recipe_stamp.py). Anything else — PostgreSQL,
a log that moved on, `--json` (typed by the read models), `--request`, `--trail`, `--follow`
— takes the full path
(api/inspect_cli.py), which prints the same text. `CONTROLROOM_QUICK_READS=0` always takes it.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import orjson

from controlroom.api import recipe_stamp
from controlroom.api.cli_exit import EXIT_DONE
from controlroom.api.run_text import print_run, print_runs_page
from controlroom.projections.layout import LAYOUT, RUNS_VERSION
from controlroom.projections.runs_list import count_runs, has_run, list_runs

QUICK_VAR = "CONTROLROOM_QUICK_READS"


def cmd_show(ns: argparse.Namespace) -> int:
    if not (ns.json or ns.request or ns.trail or ns.follow):
        with views_at_head(Path(ns.workspace)) as views:
            if views is not None:
                row = views.execute(
                    "SELECT state FROM runs WHERE run_id = ?", (ns.run_id,)
                ).fetchone()
                if row is not None:
                    from controlroom.projections.run_tree import add_totals
                    from controlroom.projections.run_view import RunView

                    view = RunView.from_state(orjson.loads(row[0])).consolidated()
                    view = add_totals(view, _states(views), ns.run_id)
                    # A loop that ended is shown with the next loop it proposes, which
                    # reads the recipe catalog: the full path prints that.
                    if not (view.get("loop") or {}).get("ending"):
                        print_run(view)
                        return EXIT_DONE
    from controlroom.api.inspect_cli import cmd_show as full_show

    return full_show(ns)


def _states(views: sqlite3.Connection) -> Callable[[str], dict[str, Any] | None]:
    def state_of(run_id: str) -> dict[str, Any] | None:
        row = views.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else dict(orjson.loads(row[0]))

    return state_of


def cmd_runs(ns: argparse.Namespace) -> int:
    if not ns.json:
        with views_at_head(Path(ns.workspace)) as views:
            if views is not None and (ns.before is None or has_run(views, ns.before)):
                rows = list_runs(views, ns.status, ns.recipe, ns.limit or None, ns.before)
                older = count_runs(views, ns.status, ns.recipe, rows[0]["run_id"]) if rows else 0
                print_runs_page(rows, older, _states(views))
                return EXIT_DONE
    from controlroom.api.inspect_cli import cmd_runs as full_runs

    return full_runs(ns)


@contextmanager
def views_at_head(workspace: Path) -> Iterator[sqlite3.Connection | None]:
    """The workspace's views file, opened read-only, when it can be read as it is; None
    otherwise (see the module's docstring), and on any doubt (a file missing or locked)."""
    log = _sqlite_log(workspace) if os.environ.get(QUICK_VAR, "1") != "0" else None
    if log is None or not recipe_stamp.still_sound(workspace):
        yield None
        return
    try:
        views = sqlite3.connect(f"{log.with_name('views.sqlite').as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        yield None
        return
    with closing(views):
        try:
            fresh = _at_head(views, log)
        except sqlite3.Error:  # no such file or table, locked, another layout: the full path
            fresh = False
        yield views if fresh else None


def _at_head(views: sqlite3.Connection, log: Path) -> bool:
    (layout,) = views.execute("PRAGMA user_version").fetchone()
    tracked = views.execute(
        "SELECT position, version FROM projection_tracking WHERE name = 'runs'"
    ).fetchone()
    if layout != LAYOUT or tracked is None or tracked[1] != RUNS_VERSION:
        return False
    # The position is read before the head: both only grow, so a position at the head read
    # after it is at least as far as the log was.
    with closing(sqlite3.connect(f"{log.as_uri()}?mode=ro", uri=True)) as events:
        (head,) = events.execute("SELECT MAX(rowid) FROM stored_events").fetchone()
    return bool(tracked[0] >= (head or 0))


def _sqlite_log(workspace: Path) -> Path | None:
    """The SQLite log `CONTROLROOM_STORE` names (eventstore/config.py), if it is one that
    exists; None for any other store."""
    spec = os.environ.get("CONTROLROOM_STORE", "").strip()
    if not spec:
        path = workspace / ".control-room" / "events.sqlite"
    elif spec.startswith("sqlite:"):
        raw = spec.removeprefix("sqlite:")
        raw = raw[2:] if raw.startswith("//") else raw
        if not raw:
            return None
        path = Path(raw) if Path(raw).is_absolute() else workspace / raw
    else:
        return None
    path = path.absolute()
    return path if path.is_file() else None
