"""The issue list (`controlroom issues`), folded from issue events."""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from domain.issue import IssueClosed, IssueOpened
from eventstore.store import EventStore

_TOPICS = [get_topic(IssueOpened), get_topic(IssueClosed)]


def list_issues(store: EventStore, run_id: str | None = None) -> list[dict[str, Any]]:
    issues: dict[str, dict[str, Any]] = {}
    for item in store.read_log(topics=_TOPICS):
        event = item.event
        at = event.timestamp.isoformat().replace("+00:00", "Z")
        if isinstance(event, IssueOpened):
            issues[event.originator_id] = {
                "issue_id": event.originator_id,
                "status": "open",
                "opened_at": at,
                **event.payload(),
            }
        elif isinstance(event, IssueClosed) and event.originator_id in issues:
            issues[event.originator_id].update(status="closed", resolution=event.resolution)
    rows = [i for i in issues.values() if run_id is None or i["run_id"] == run_id]
    return sorted(rows, key=lambda i: (i["opened_at"], i["issue_id"]))
