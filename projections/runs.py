"""The runs projection: each run's consolidated view and step log, and its artifact texts.

One row per run holds the columns `runs` lists and filters by, and the fold's state (run,
step instances, slot metadata, DoD) as JSON; an artifact's text is kept once, in
`artifacts`, and read only by `GET /api/runs/{id}/cache/{slot}`. A batch loads each run
it touches once, folds every event of that run, and writes each changed row once.

It reads every event, not a list of types: a version missing from any run's stream must
be noticed (the run is then `damaged`, the others unaffected), and a new step kind's events
must move its run's version without this module knowing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db
from controlroom.projections.layout import RUNS_VERSION
from controlroom.projections.run_view import RUN_EVENT_NAMES, RunView
from controlroom.projections.runs_list import SUMMARY
from controlroom.projections.runs_list import list_runs as list_runs

_COLUMNS = (*SUMMARY, "version", "state")
_IDS_PER_QUERY = 500  # below SQLite's limit on bound parameters


class RunsProjection(Projection):
    name: ClassVar[str] = "runs"
    topics: ClassVar[frozenset[str] | None] = None
    version: ClassVar[int] = RUNS_VERSION
    tables: ClassVar[tuple[str, ...]] = ("runs", "artifacts")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS runs (
            run_id TEXT PRIMARY KEY, recipe_id TEXT NOT NULL, status TEXT NOT NULL,
            created_at TEXT NOT NULL, completed_at TEXT, description TEXT NOT NULL,
            owner TEXT, lease_expires_at TEXT, damage TEXT, version INTEGER NOT NULL,
            state BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at, run_id)",
        "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, created_at)",
        """CREATE TABLE IF NOT EXISTS artifacts (
            run_id TEXT NOT NULL, slot TEXT NOT NULL, text TEXT NOT NULL,
            PRIMARY KEY (run_id, slot))""",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        # One read for every run the batch touches; None: not (yet) a run's stream.
        views: dict[str, RunView | None] = load_views(conn, {i.originator_id for i in batch})
        for item in batch:
            run_id = item.originator_id
            view = views[run_id]
            if view is None:
                if item.type_name not in RUN_EVENT_NAMES:
                    views[run_id] = None
                    continue  # another aggregate's event: its own projection reads it
                view = RunView()  # a run whose first events are missing: it will say so
            views[run_id] = view
            _fold(view, item)
            if item.type_name == "RunStarted":
                _list_fork_on_source(conn, views, view, run_id)
        changed = [(run_id, view) for run_id, view in views.items() if view is not None]
        conn.executemany(
            conn.upsert("runs", _COLUMNS, ("run_id",)),
            [_row(run_id, view) for run_id, view in changed],
        )
        conn.executemany(
            conn.upsert("artifacts", ("run_id", "slot", "text"), ("run_id", "slot")),
            [(run_id, slot, text) for run_id, view in changed for slot, text in view.texts.items()],
        )


def _list_fork_on_source(
    conn: Db, views: dict[str, RunView | None], fork: RunView, fork_id: str
) -> None:
    """Lineage: a fork is listed on its source's view (`forks`), so `show SOURCE` names
    every run forked from it. The source's own stream says nothing of its forks."""
    source = fork.run.get("forked_from") or {}
    source_id = source.get("run_id")
    if not source_id or source_id == fork_id:
        return
    view = views.get(source_id) or load_view(conn, source_id)
    if view is None or not view.run:
        return
    forks = view.run.setdefault("forks", [])
    if not any(f["run_id"] == fork_id for f in forks):
        forks.append({"run_id": fork_id, "step": source.get("step"),
                      "created_at": fork.run.get("created_at")})  # fmt: skip
    views[source_id] = view


def _fold(view: RunView, item: Recorded) -> None:
    """Fold one event; one that cannot be read or folded marks the run damaged, not fatal."""
    stage = "read"
    try:
        data = item.decode()  # malformed JSON, or a shape written by a newer release
        stage = "folded"
        view.apply_data(item.type_name, data)  # JSON that parses, but not as this event
    except Exception as exc:
        detail = f"cannot be read: {exc}" if stage == "read" else f"cannot be folded: {exc!r}"
        if view.damage is None:
            view.mark_damaged(
                item.originator_id, None, f"event v{item.version} ({item.type_name}) {detail}"
            )
        view.version = max(view.version, item.version)


def _row(run_id: str, view: RunView) -> tuple[Any, ...]:
    run = view.run
    return (
        run_id,
        run["recipe_id"],
        run["status"],
        run["created_at"],
        run["completed_at"],
        run["task"]["description"],
        run.get("owner"),
        run.get("lease_expires_at"),
        run.get("damage"),
        view.version,
        orjson.dumps(view.to_state()),
    )


# -- reads -------------------------------------------------------------------------------------


def load_view(conn: Db, run_id: str) -> RunView | None:
    """The run's fold as last written, without artifact texts (see `artifact_text`)."""
    row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return RunView.from_state(orjson.loads(row[0])) if row else None


def load_views(conn: Db, run_ids: set[str]) -> dict[str, RunView | None]:
    """`load_view` for many runs at once; None for each id that is not a run's."""
    found: dict[str, RunView | None] = dict.fromkeys(run_ids)
    ids = list(run_ids)
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        rows = conn.execute(
            f"SELECT run_id, state FROM runs WHERE run_id IN ({','.join('?' * len(chunk))})",
            chunk,
        ).fetchall()
        found.update((run_id, RunView.from_state(orjson.loads(state))) for run_id, state in rows)
    return found


def run_status(conn: Db, run_id: str) -> str | None:
    row = conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return str(row[0]) if row else None


def artifact_text(conn: Db, run_id: str, slot: str) -> str | None:
    row = conn.execute(
        "SELECT text FROM artifacts WHERE run_id = ? AND slot = ?", (run_id, slot)
    ).fetchone()
    return str(row[0]) if row else None
