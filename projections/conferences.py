"""The conference projection: each round's transcript (question, evidence, every reply,
abstention and rejection, the calls each role made), folded by the domain's own
`ConferenceRound` from the round's events."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

from controlroom.domain.conference import (
    ROUND_EVENTS,
    ConferenceRound,
    ReplyAccepted,
    RoundOpened,
)
from controlroom.domain.events import EVENT_TYPES, DomainEvent
from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db

log = logging.getLogger("controlroom.projections")


class ConferencesProjection(Projection):
    name: ClassVar[str] = "conferences"
    topics: ClassVar[frozenset[str] | None] = ROUND_EVENTS
    version: ClassVar[int] = 1
    tables: ClassVar[tuple[str, ...]] = ("conferences", "conference_events")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS conferences (
            round_id TEXT PRIMARY KEY, status TEXT NOT NULL, opened_at TEXT NOT NULL,
            data BLOB NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS conference_events (
            round_id TEXT NOT NULL, version INTEGER NOT NULL, type_name TEXT NOT NULL,
            data BLOB NOT NULL, PRIMARY KEY (round_id, version))""",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        touched: dict[str, None] = {}
        rows = []
        for item in batch:
            try:
                data = item.decode()
            except Exception as exc:  # one unreadable event must not stop every round
                log.warning("conference event %s cannot be read: %s", item.originator_id, exc)
                continue
            rows.append((item.originator_id, item.version, item.type_name, orjson.dumps(data)))
            touched[item.originator_id] = None
        conn.executemany(
            conn.upsert("conference_events", ("round_id", "version", "type_name", "data"),
                        ("round_id", "version")),
            rows,
        )  # fmt: skip
        views = [v for v in (_fold(conn, r) for r in touched) if v is not None]
        conn.executemany(
            conn.upsert("conferences", ("round_id", "status", "opened_at", "data"), ("round_id",)),
            [(v["round_id"], v["status"], v["opened_at"], orjson.dumps(v)) for v in views],
        )


def _fold(conn: Db, round_id: str) -> dict[str, Any] | None:
    rows = conn.execute(
        "SELECT type_name, data FROM conference_events WHERE round_id = ? ORDER BY version",
        (round_id,),
    ).fetchall()
    events: list[DomainEvent] = [
        EVENT_TYPES.get(name).model_validate(orjson.loads(data)) for name, data in rows
    ]
    if not events or not isinstance(events[0], RoundOpened):
        return None
    conference = ConferenceRound.project(None, events)
    assert conference is not None
    replies = []
    for role in conference.roles:
        reply = conference.replies.get(role)
        calls = [c for c in conference.calls if c.role == role]
        entry: dict[str, Any] = {
            "role": role,
            "status": "pending",
            "text": None,
            "reason": None,
            "citations": [],
            "calls": [
                {"micro_step": c.micro_step, "tier": c.tier, "model": c.model} for c in calls
            ],
        }
        if isinstance(reply, ReplyAccepted):
            entry.update(
                status="abstained" if reply.abstained else "accepted",
                text=reply.text,
                citations=reply.citations,
            )
        elif reply is not None:
            entry.update(status="rejected", text=reply.text, reason=reply.reason)
        replies.append(entry)
    failed = next((e for e in events if type(e).__name__ == "RoundFailed"), None)
    return {
        "round_id": conference.id,
        "question": conference.question,
        "status": conference.status,
        "roles": conference.roles,
        "allowed_tools": conference.allowed_tools,
        "require_tool": conference.require_tool,
        "opened_at": events[0].timestamp.isoformat(),
        "updated_at": events[-1].timestamp.isoformat(),
        "receipts": [
            {
                "receipt_id": r.receipt_id,
                "tool": r.tool,
                "args": r.args,
                "summary": r.summary,
                "duration_ms": r.duration_ms,
            }
            for r in conference.receipts.values()
        ],
        "refused": [{"tool": r.tool, "reason": r.reason} for r in conference.refused],
        "evidence": conference.evidence,
        "replies": replies,
        "issue_id": conference.issue_id,
        "error": getattr(failed, "reason", None),
        "transcript": conference.transcript(),
    }


def load_round(conn: Db, round_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM conferences WHERE round_id = ?", (round_id,)).fetchone()
    if row is None:
        return None
    view: dict[str, Any] = orjson.loads(row[0])
    return view


def list_rounds(conn: Db) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT data FROM conferences ORDER BY opened_at, round_id").fetchall()
    found = []
    for (data,) in rows:
        view = orjson.loads(data)
        found.append(
            {
                "round_id": view["round_id"],
                "question": view["question"],
                "status": view["status"],
                "opened_at": view["opened_at"],
                "accepted": sum(r["status"] == "accepted" for r in view["replies"]),
                "abstained": sum(r["status"] == "abstained" for r in view["replies"]),
                "rejected": sum(r["status"] == "rejected" for r in view["replies"]),
                "issue_id": view["issue_id"],
            }
        )
    return found
