"""The issues projection: every issue with its status, filterable by run."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db

log = logging.getLogger("controlroom.projections")
_COLUMNS = ("issue_id", "run_id", "status", "opened_at", "data")
_OPENED_FIELDS = ("kind", "title", "detail", "run_id", "session_id", "recipe_id", "check")


class IssuesProjection(Projection):
    name: ClassVar[str] = "issues"
    topics: ClassVar[frozenset[str] | None] = frozenset({"IssueOpened", "IssueClosed"})
    version: ClassVar[int] = 1
    tables: ClassVar[tuple[str, ...]] = ("issues",)
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS issues (
            issue_id TEXT PRIMARY KEY, run_id TEXT, status TEXT NOT NULL,
            opened_at TEXT NOT NULL, data BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS issues_by_run ON issues (run_id, opened_at)",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        changed: dict[str, dict[str, Any]] = {}
        for item in batch:
            try:
                e = item.decode()
            except Exception as exc:  # one unreadable event must not stop every issue
                log.warning(
                    "issue event %s v%s cannot be read: %s", item.originator_id, item.version, exc
                )
                continue
            _HANDLERS[item.type_name](conn, changed, item.originator_id, e)
        conn.executemany(
            conn.upsert("issues", _COLUMNS, ("issue_id",)),
            [
                (i["issue_id"], i["run_id"], i["status"], i["opened_at"], orjson.dumps(i))
                for i in changed.values()
            ],
        )


Changed = dict[str, dict[str, Any]]


def _on_opened(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    changed[issue_id] = {
        "issue_id": issue_id,
        "status": "open",
        "opened_at": e["timestamp"],
        **{k: e.get(k) for k in _OPENED_FIELDS},
        "evidence": e.get("evidence"),
    }


def _on_closed(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = changed.get(issue_id) or load_issue(conn, issue_id)
    if issue is not None:
        issue.update(status="closed", resolution=e["resolution"], closed_at=e["timestamp"])
        changed[issue_id] = issue


_HANDLERS = {"IssueOpened": _on_opened, "IssueClosed": _on_closed}


# -- reads -------------------------------------------------------------------------------------


def load_issue(conn: Db, issue_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM issues WHERE issue_id = ?", (issue_id,)).fetchone()
    return _loads(row[0]) if row else None


def list_issues(conn: Db, run_id: str | None) -> list[dict[str, Any]]:
    where, params = ("WHERE run_id = ? ", [run_id]) if run_id is not None else ("", [])
    rows = conn.execute(
        f"SELECT data FROM issues {where}ORDER BY opened_at, issue_id", params
    ).fetchall()
    return [_loads(row[0]) for row in rows]


def _loads(data: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(data)
    return loaded
