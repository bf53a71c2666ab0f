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
from pathlib import Path
from typing import Any

from domain.events import DomainEvent
from domain.issue import IssueClosed, IssueOpened
from domain.run_events import ReceiptIssued
from eventstore.store import EventStore, Positioned
from projections.run_view import RunView

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


def _iso(event: DomainEvent) -> str:
    return event.timestamp.isoformat().replace("+00:00", "Z")


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
                    json.dumps(view.to_state()),
                ),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?)",
                [(run_id, s["step_index"], s["status"], json.dumps(s)) for s in view.steps],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO slots VALUES (?, ?, ?, ?)",
                [
                    (run_id, name, slot["type"], json.dumps(slot))
                    for name, slot in view.slots.items()
                ],
            )


Handler = Callable[[_Batch, DomainEvent], None]


def _on_run_event(batch: _Batch, event: DomainEvent) -> None:
    batch.run_view(event.originator_id).apply(event)


def _on_receipt(batch: _Batch, event: DomainEvent) -> None:
    assert isinstance(event, ReceiptIssued)
    _on_run_event(batch, event)
    batch.conn.execute(
        "INSERT OR REPLACE INTO receipts VALUES (?, ?, ?, ?, ?)",
        (
            event.receipt_id,
            event.originator_id,
            event.session_id,
            event.tool,
            json.dumps(
                {
                    "receipt_id": event.receipt_id,
                    "run_id": event.originator_id,
                    "issued_at": _iso(event),
                    **event.payload(),
                }
            ),
        ),
    )


def _on_issue_opened(batch: _Batch, event: DomainEvent) -> None:
    assert isinstance(event, IssueOpened)
    data = {
        "issue_id": event.originator_id,
        "status": "open",
        "opened_at": _iso(event),
        **event.payload(),
    }
    batch.conn.execute(
        "INSERT OR REPLACE INTO issues VALUES (?, ?, ?, ?, ?)",
        (event.originator_id, event.run_id, "open", _iso(event), json.dumps(data)),
    )


def _on_issue_closed(batch: _Batch, event: DomainEvent) -> None:
    assert isinstance(event, IssueClosed)
    row = batch.conn.execute(
        "SELECT data FROM issues WHERE issue_id = ?", (event.originator_id,)
    ).fetchone()
    if row:
        data = json.loads(row[0]) | {"status": "closed", "resolution": event.resolution}
        batch.conn.execute(
            "UPDATE issues SET status = 'closed', data = ? WHERE issue_id = ?",
            (json.dumps(data), event.originator_id),
        )


HANDLERS: dict[str, Handler] = {
    "ReceiptIssued": _on_receipt,
    "IssueOpened": _on_issue_opened,
    "IssueClosed": _on_issue_closed,
}


def _handler_for(event: DomainEvent) -> Handler:
    return HANDLERS.get(event.type_name, _on_run_event)


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

    def _read(self, after: int, limit: int) -> list[Positioned]:
        items: list[Positioned] = []
        for item in self.store.read_log(after=after, batch=limit):
            items.append(item)
            if len(items) >= limit:
                break
        return items

    def _apply(self, items: list[Positioned]) -> None:
        batch = _Batch(self.conn)
        for item in items:
            _handler_for(item.event)(batch, item.event)
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
