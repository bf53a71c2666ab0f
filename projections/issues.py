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


#: Run events that make up the audit trail, and the kind each is listed as.
_TRAIL_EVENTS = {
    "PacketIssued": "packet",
    "ReceiptRecorded": "receipt",
    "ReceiptIssued": "tool_receipt",
    "StopHook": "stop_hook",
}


class IssuesProjection(Projection):
    name: ClassVar[str] = "issues"
    topics: ClassVar[frozenset[str] | None] = frozenset(
        {
            "IssueOpened",
            "IssueClosed",
            "IssueAnswered",
            "IssueReopened",
            "IssueCommented",
            "IssueRecurred",
        }
        | set(_TRAIL_EVENTS)
    )
    version: ClassVar[int] = 3
    tables: ClassVar[tuple[str, ...]] = ("issues", "issue_runs", "run_trail")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS issues (
            issue_id TEXT PRIMARY KEY, run_id TEXT, status TEXT NOT NULL,
            opened_at TEXT NOT NULL, data BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS issues_by_run ON issues (run_id, opened_at)",
        # Every run linked to an issue: the one that opened it and each that found it again.
        """CREATE TABLE IF NOT EXISTS issue_runs (
            issue_id TEXT NOT NULL, run_id TEXT NOT NULL, PRIMARY KEY (issue_id, run_id))""",
        # The audit trail of every run (seed 001 D): packets and receipts, agents' and tools',
        # in the order they happened; an issue's trail is its runs' trails.
        """CREATE TABLE IF NOT EXISTS run_trail (
            run_id TEXT NOT NULL, position INTEGER NOT NULL, at TEXT NOT NULL,
            kind TEXT NOT NULL, ref TEXT, data BLOB NOT NULL, PRIMARY KEY (run_id, position))""",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        changed: dict[str, dict[str, Any]] = {}
        links: list[tuple[str, str]] = []
        trail: list[tuple[Any, ...]] = []
        for item in batch:
            try:
                e = item.decode()
            except Exception as exc:  # one unreadable event must not stop every issue
                log.warning(
                    "issue event %s v%s cannot be read: %s", item.originator_id, item.version, exc
                )
                continue
            if item.type_name in _TRAIL_EVENTS:
                trail.append(_trail_row(item, e))
                continue
            _HANDLERS[item.type_name](conn, changed, item.originator_id, e)
            if e.get("run_id"):
                links.append((item.originator_id, e["run_id"]))
        conn.executemany(
            conn.upsert("issues", _COLUMNS, ("issue_id",)),
            [
                (i["issue_id"], i["run_id"], i["status"], i["opened_at"], orjson.dumps(i))
                for i in changed.values()
            ],
        )
        conn.executemany(
            conn.upsert("issue_runs", ("issue_id", "run_id"), ("issue_id", "run_id")), links
        )
        conn.executemany(conn.upsert("run_trail", _TRAIL_COLUMNS, ("run_id", "position")), trail)


Changed = dict[str, dict[str, Any]]
_TRAIL_COLUMNS = ("run_id", "position", "at", "kind", "ref", "data")


def _trail_row(item: Recorded, e: dict[str, Any]) -> tuple[Any, ...]:
    kind = _TRAIL_EVENTS[item.type_name]
    entry: dict[str, Any] = {"kind": kind, "at": e["timestamp"], "step_id": e.get("step_id")}
    ref = None
    if kind == "packet":
        packet = e["packet"]
        ref = packet["packet_id"]
        entry.update(
            packet_id=ref,
            actor=packet["target"],
            intent=packet["intent"],
            summary=packet["scope"]["description"],
            artifacts=packet["output_contract"]["expected_artifacts"],
            inputs=[i["slot"] for i in packet["inputs"]],
        )
    elif kind == "receipt":
        receipt = e["receipt"]
        ref = receipt["receipt_id"]
        entry.update(
            receipt_id=ref,
            packet_id=receipt["packet_id"],
            actor=f"{receipt['actor']['agent']} ({receipt['actor']['model']})",
            summary=receipt["reasoning_summary"],
            decisions=receipt["decisions"],
            excerpt=receipt["report_excerpt"],
            artifacts=receipt["outputs_produced"],
            stop_hook=receipt["STOP_HOOK"],
            report=receipt.get("output"),
            report_ref=receipt.get("report_ref"),
        )
    elif kind == "tool_receipt":
        ref = e.get("receipt_id")
        entry.update(
            receipt_id=ref,
            actor=f"tool {e.get('tool')}",
            summary=e.get("summary", ""),
            excerpt=e.get("summary", ""),
        )
    else:
        entry.update(
            actor=e.get("agent_archetype"),
            summary="STOP_HOOK: " + "; ".join(e.get("errors", [])[:3]),
        )
    return (item.originator_id, item.position, e["timestamp"], kind, ref, orjson.dumps(entry))


def _on_opened(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    changed[issue_id] = {
        "issue_id": issue_id,
        "status": "open",
        "opened_at": e["timestamp"],
        **{k: e.get(k) for k in _OPENED_FIELDS},
        "evidence": e.get("evidence"),
        "runs": [e["run_id"]] if e.get("run_id") else [],
        "comments": [],
        "history": [{"at": e["timestamp"], "event": "opened", "by": "policy", "text": e["title"]}],
    }


def _changing(conn: Db, changed: Changed, issue_id: str) -> dict[str, Any] | None:
    issue = changed.get(issue_id) or load_issue(conn, issue_id)
    if issue is not None:
        changed[issue_id] = issue
    return issue


def _history(issue: dict[str, Any], e: dict[str, Any], what: str, **fields: Any) -> None:
    issue.setdefault("history", []).append({"at": e["timestamp"], "event": what, **fields})


def _on_closed(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = _changing(conn, changed, issue_id)
    if issue is not None:
        issue.update(status="closed", resolution=e["resolution"], closed_at=e["timestamp"])
        _history(issue, e, "closed", by=e.get("by", "user"), text=e["resolution"])


def _on_answered(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = _changing(conn, changed, issue_id)
    if issue is not None:
        text = e["resolution"]
        issue.update(status="closed", resolution=f"answered: {text}", closed_at=e["timestamp"])
        _history(issue, e, "answered", by=e.get("by", "user"), text=text)


def _on_reopened(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = _changing(conn, changed, issue_id)
    if issue is not None:
        issue.update(status="open", resolution=None, closed_at=None)
        _history(issue, e, "reopened", by=e.get("by", "user"), text=e["reason"])
        _link(issue, e.get("run_id"))


def _on_commented(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = _changing(conn, changed, issue_id)
    if issue is not None:
        issue.setdefault("comments", []).append(
            {"at": e["timestamp"], "author": e.get("author", "user"), "text": e["text"]}
        )
        _history(issue, e, "commented", by=e.get("author", "user"), text=e["text"])


def _on_recurred(conn: Db, changed: Changed, issue_id: str, e: dict[str, Any]) -> None:
    issue = _changing(conn, changed, issue_id)
    if issue is not None:
        _link(issue, e["run_id"])
        _history(issue, e, "found again", by="policy", text=f"by run {e['run_id']}")


def _link(issue: dict[str, Any], run_id: str | None) -> None:
    runs = issue.setdefault("runs", [issue["run_id"]] if issue.get("run_id") else [])
    if run_id and run_id not in runs:
        runs.append(run_id)


_HANDLERS = {
    "IssueOpened": _on_opened,
    "IssueClosed": _on_closed,
    "IssueAnswered": _on_answered,
    "IssueReopened": _on_reopened,
    "IssueCommented": _on_commented,
    "IssueRecurred": _on_recurred,
}


# -- reads -------------------------------------------------------------------------------------


def load_issue(conn: Db, issue_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM issues WHERE issue_id = ?", (issue_id,)).fetchone()
    return _loads(row[0]) if row else None


def list_issues(conn: Db, run_id: str | None, status: str | None = None) -> list[dict[str, Any]]:
    """Issues oldest first; with `run_id`, those the run opened or found again."""
    clauses, params = [], []
    if run_id is not None:
        clauses.append("issue_id IN (SELECT issue_id FROM issue_runs WHERE run_id = ?)")
        params.append(run_id)
    if status is not None:
        clauses.append("status = ?")
        params.append(status)
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    rows = conn.execute(
        f"SELECT data FROM issues {where}ORDER BY opened_at, issue_id", params
    ).fetchall()
    return [_loads(row[0]) for row in rows]


def _loads(data: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(data)
    return loaded


def run_trail(conn: Db, run_id: str) -> list[dict[str, Any]]:
    """One run's packets, receipts and STOP_HOOKs, in the order they happened."""
    rows = conn.execute(
        "SELECT run_id, data FROM run_trail WHERE run_id = ? ORDER BY at, position", (run_id,)
    ).fetchall()
    return _entries(rows)


def issue_trail(conn: Db, issue_id: str) -> list[dict[str, Any]]:
    """Every packet, receipt and STOP_HOOK of the issue's runs, in the order they happened."""
    rows = conn.execute(
        "SELECT run_id, data FROM run_trail WHERE run_id IN "
        "(SELECT run_id FROM issue_runs WHERE issue_id = ?) ORDER BY at, position",
        (issue_id,),
    ).fetchall()
    return _entries(rows)


def _entries(rows: list[Any]) -> list[dict[str, Any]]:
    entries = []
    for run_id, data in rows:
        entry = {"run_id": run_id, **_loads(data)}
        report, ref = entry.pop("report", None), entry.pop("report_ref", None)
        if entry["kind"] == "receipt":
            entry["has_report"] = bool(report or ref)
        entries.append(entry)
    return entries


def receipt_report(conn: Db, receipt_id: str) -> str | None:
    """A receipt's full report: inline when short, else the run's slot it names (kept once)."""
    row = conn.execute(
        "SELECT run_id, data FROM run_trail WHERE ref = ? AND kind = 'receipt'", (receipt_id,)
    ).fetchone()
    if row is None:
        return None
    entry = _loads(row[1])
    if entry.get("report"):
        return str(entry["report"])
    ref = entry.get("report_ref") or {}
    found = conn.execute(
        "SELECT text FROM artifacts WHERE run_id = ? AND slot = ?", (row[0], ref.get("slot"))
    ).fetchone()
    return str(found[0]) if found else None
