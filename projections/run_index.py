"""The list of runs (`GET /api/runs`, `controlroom runs`), folded from lifecycle events."""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from domain.run_events import RunCancelled, RunCompleted, RunFailed, RunStarted
from eventstore.store import EventStore

_TOPICS = [get_topic(cls) for cls in (RunStarted, RunCompleted, RunFailed, RunCancelled)]
_STATUS = {RunCompleted: "done", RunFailed: "failed", RunCancelled: "cancelled"}


def list_runs(
    store: EventStore, status: str | None = None, recipe_id: str | None = None
) -> list[dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for item in store.read_log(topics=_TOPICS):
        event = item.event
        at = event.timestamp.isoformat().replace("+00:00", "Z")
        if isinstance(event, RunStarted):
            runs[event.originator_id] = {
                "run_id": event.originator_id,
                "recipe_id": event.recipe_id,
                "status": "running",
                "created_at": at,
                "completed_at": None,
                "description": event.task.description,
            }
        elif event.originator_id in runs:
            runs[event.originator_id].update(status=_STATUS[type(event)], completed_at=at)
    rows = [
        r
        for r in runs.values()
        if (status is None or r["status"] == status)
        and (recipe_id is None or r["recipe_id"] == recipe_id)
    ]
    return sorted(rows, key=lambda r: (r["created_at"], r["run_id"]))


def unfinished_run_ids(store: EventStore) -> list[str]:
    return [r["run_id"] for r in list_runs(store, status="running")]
