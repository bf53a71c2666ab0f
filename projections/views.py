"""Persistent read models, each row written in the same transaction as the tracking position.

The views live in their own SQLite file beside the event store. Catching up reads the
event log after the recorded position in batches, applies one handler per event type, and
commits the touched rows together with the new position: exactly once, resumable, and
rebuildable from zero. Several processes may catch up at once: `BEGIN IMMEDIATE` makes
them take turns, and each re-reads the position inside its transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from controlroom.domain import run_events
from controlroom.domain.events import EVENT_TYPES, DomainEvent
from controlroom.domain.issue import IssueClosed, IssueOpened
from controlroom.domain.run_events import ReceiptIssued
from controlroom.eventstore.store import EventStore
from controlroom.projections.run_view import RunView

TRACKING_NAME = "views"
SCHEMA = """
CREATE TABLE IF NOT EXISTS tracking (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, recipe_id TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, completed_at TEXT, description TEXT NOT NULL,
    version INTEGER NOT NULL, state TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, created_at);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL, step_index INTEGER NOT NULL, status TEXT NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (run_id, step_index));
CREATE TABLE IF NOT EXISTS slots (
    run_id TEXT NOT NULL, slot TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (run_id, slot));
CREATE TABLE IF NOT EXISTS receipts (
    receipt_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, session_id TEXT NOT NULL,
    tool TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS issues (
    issue_id TEXT PRIMARY KEY, run_id TEXT, status TEXT NOT NULL, opened_at TEXT NOT NULL,
    data TEXT NOT NULL);
"""
TABLES = ("runs", "steps", "slots", "receipts", "issues")


class _Batch:
    """The rows one catch-up batch changes, flushed in a single transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.runs: dict[str, RunView] = {}

    def run_view(self, run_id: str) -> RunView:
        if run_id not in self.runs:
            row = self.conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            self.runs[run_id] = RunView.from_state(json.loads(row[0])) if row else RunView()
        return self.runs[run_id]

    def flush(self) -> None:
        for run_id, view in self.runs.items():
            run = view.run
            self.conn.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    run["recipe_id"],
                    run["status"],
                    run["created_at"],
                    run["completed_at"],
                    run["task"]["description"],
                    view.version,
                    _dumps(view.to_state()),
                ),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?)",
                [(run_id, s["step_index"], s["status"], _dumps(s)) for s in view.steps],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO slots VALUES (?, ?, ?, ?)",
                [(run_id, name, slot["type"], _dumps(slot)) for name, slot in view.slots.items()],
            )


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


@dataclass(frozen=True)
class Recorded:
    """One stored event as the projector reads it: position, type, and its JSON as data.

    The projector folds the stored JSON directly; it does not build pydantic objects,
    which is most of the cost of reading the log."""

    position: int
    type_name: str
    data: dict[str, Any]


Handler = Callable[[_Batch, Recorded], None]
_ENVELOPE = ("originator_id", "originator_version", "timestamp", "prev_hash", "event_hash")


def _payload(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in _ENVELOPE}


def _on_run_event(batch: _Batch, item: Recorded) -> None:
    batch.run_view(item.data["originator_id"]).apply_data(item.type_name, item.data)


def _on_receipt(batch: _Batch, item: Recorded) -> None:
    _on_run_event(batch, item)
    e = item.data
    receipt = {
        "receipt_id": e["receipt_id"],
        "run_id": e["originator_id"],
        "issued_at": e["timestamp"],
        **_payload(e),
    }
    batch.conn.execute(
        "INSERT OR REPLACE INTO receipts VALUES (?, ?, ?, ?, ?)",
        (e["receipt_id"], e["originator_id"], e["session_id"], e["tool"], _dumps(receipt)),
    )


def _on_issue_opened(batch: _Batch, item: Recorded) -> None:
    e = item.data
    issue = {
        "issue_id": e["originator_id"],
        "status": "open",
        "opened_at": e["timestamp"],
        **_payload(e),
    }
    batch.conn.execute(
        "INSERT OR REPLACE INTO issues VALUES (?, ?, ?, ?, ?)",
        (e["originator_id"], e["run_id"], "open", e["timestamp"], _dumps(issue)),
    )


def _on_issue_closed(batch: _Batch, item: Recorded) -> None:
    e = item.data
    row = batch.conn.execute(
        "SELECT data FROM issues WHERE issue_id = ?", (e["originator_id"],)
    ).fetchone()
    if row:
        data = json.loads(row[0]) | {"status": "closed", "resolution": e["resolution"]}
        batch.conn.execute(
            "UPDATE issues SET status = 'closed', data = ? WHERE issue_id = ?",
            (_dumps(data), e["originator_id"]),
        )


#: Every event of a run's stream folds into its run view; a few also feed other views.
RUN_EVENT_TYPES = frozenset(
    v.type_name
    for v in vars(run_events).values()
    if isinstance(v, type) and issubclass(v, DomainEvent) and v is not DomainEvent
)
HANDLERS: dict[str, Handler] = {
    **{name: _on_run_event for name in RUN_EVENT_TYPES},
    ReceiptIssued.type_name: _on_receipt,
    IssueOpened.type_name: _on_issue_opened,
    IssueClosed.type_name: _on_issue_closed,
}


class Views:
    def __init__(self, store: EventStore, path: Path | None) -> None:
        self.store = store
        # One connection, serialized by a lock: the server's threads share it.
        self.conn = sqlite3.connect(
            str(path) if path else ":memory:",
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
        )
        self.lock = threading.RLock()
        with self.lock:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(SCHEMA)

    @classmethod
    def for_store(cls, store: EventStore) -> Views:
        dbname = store.env.get("SQLITE_DBNAME")
        path = Path(dbname).with_name("views.sqlite") if dbname else None
        return cls(store, path)

    def position(self) -> int:
        row = self.conn.execute(
            "SELECT position FROM tracking WHERE name = ?", (TRACKING_NAME,)
        ).fetchone()
        return int(row[0]) if row else 0

    def catch_up(self, batch_size: int = 1000) -> int:
        """Apply every event recorded since the tracked position; returns how many."""
        applied = 0
        with self.lock:
            while True:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    start = self.position()
                    items = list(self._read(start, batch_size))
                    if items:
                        self._apply(items)
                        self.conn.execute(
                            "INSERT OR REPLACE INTO tracking VALUES (?, ?)",
                            (TRACKING_NAME, items[-1].position),
                        )
                    self.conn.execute("COMMIT")
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                applied += len(items)
                if len(items) < batch_size:
                    return applied

    def _read(self, after: int, limit: int) -> list[Recorded]:
        notes = self.store.recorder.select_notifications(
            start=after, limit=limit, inclusive_of_start=False
        )
        return [
            Recorded(note.id, *EVENT_TYPES.upcast_data(note.topic, note.state)) for note in notes
        ]

    def _apply(self, items: list[Recorded]) -> None:
        batch = _Batch(self.conn)
        for item in items:
            handler = HANDLERS.get(item.type_name)
            if handler is not None:  # events of other aggregates have views of their own
                handler(batch, item)
        batch.flush()

    def rebuild(self) -> int:
        """Drop every view and replay the whole log from position zero."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            for table in (*TABLES, "tracking"):
                self.conn.execute(f"DELETE FROM {table}")
            self.conn.execute("COMMIT")
            return self.catch_up()

    # -- queries -----------------------------------------------------------------------------

    def run(self, run_id: str) -> RunView | None:
        with self.lock:
            row = self.conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return RunView.from_state(json.loads(row[0])) if row else None

    def runs(self, status: str | None = None, recipe_id: str | None = None) -> list[dict[str, Any]]:
        query = (
            "SELECT run_id, recipe_id, status, created_at, completed_at, description "
            "FROM runs WHERE (? IS NULL OR status = ?) AND (? IS NULL OR recipe_id = ?) "
            "ORDER BY created_at, run_id"
        )
        with self.lock:
            rows = self.conn.execute(query, (status, status, recipe_id, recipe_id)).fetchall()
        keys = ("run_id", "recipe_id", "status", "created_at", "completed_at", "description")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def issues(self, run_id: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT data FROM issues WHERE (? IS NULL OR run_id = ?) "
                "ORDER BY opened_at, issue_id",
                (run_id, run_id),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def issue(self, issue_id: str) -> dict[str, Any] | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT data FROM issues WHERE issue_id = ?", (issue_id,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def receipt(self, receipt_id: str) -> dict[str, Any] | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT data FROM receipts WHERE receipt_id = ?", (receipt_id,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every view, ordered: for comparing a rebuild with the live views."""
        with self.lock:
            return {t: sorted(self.conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}

    def close(self) -> None:
        self.conn.close()
