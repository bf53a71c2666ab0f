"""Bounded pages of stored history with global positions, for the live feeds.

A run's feed must carry each event's *global* position (the SSE `id`, so one cursor serves
the run feed and the global feed alike), yet a finished run's feed should read only that
run's events. The library reads one stream by version, without positions, and reads
positions only from the global log. On SQLite the position is the row id of the same
table, so one indexed query on `(originator_id, originator_version)` returns both. Other
backends fall back to filtering the global log (the in-memory store is small; PostgreSQL's
`notification_id` column gives the same query when it joins).

Every function here blocks on the database: the server calls them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from eventsourcing.persistence import Notification
from eventsourcing.sqlite import SQLiteApplicationRecorder

from controlroom.domain.events import DomainEvent
from controlroom.eventstore.store import EventStore, Positioned

PAGE = 500


@dataclass(frozen=True)
class Page:
    """The readable events of one bounded read, and how far the read went: a damaged
    record is skipped (the store reports it), yet the cursor moves past it."""

    items: list[Positioned]
    last: int  # the last position read, readable or not; `after` when nothing was
    full: bool  # the read returned its limit: there may be more


def log_page(store: EventStore, after: int, limit: int = PAGE) -> Page:
    """Up to `limit` records of the global log after position `after`."""
    notes = store.recorder.select_notifications(start=after, limit=limit, inclusive_of_start=False)
    return _page(store, notes, after, limit)


def stream_page(
    store: EventStore, aggregate_id: str, after: int, limit: int = PAGE
) -> list[Positioned]:
    """Up to `limit` events of one aggregate's stream after global position `after`."""
    recorder = store.recorder
    if isinstance(recorder, SQLiteApplicationRecorder):
        statement = (
            f"SELECT rowid, originator_version, topic, state FROM {recorder.events_table_name} "
            "WHERE originator_id = ? AND rowid > ? ORDER BY originator_version LIMIT ?"
        )
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(statement, (aggregate_id, after, limit))
            rows = cursor.fetchall()
        notes = [
            Notification(
                id=row["rowid"],
                originator_id=aggregate_id,
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=row["state"],
            )
            for row in rows
        ]
        return _page(store, notes, after, limit).items
    found: list[Positioned] = []
    for item in store.read_log(after=after):
        if item.event.originator_id == aggregate_id:
            found.append(item)
            if len(found) == limit:
                break
    return found


def read_stream(
    store: EventStore, aggregate_id: str, after: int = 0, batch: int = PAGE
) -> Iterator[Positioned]:
    """One aggregate's events after global position `after`, in order, page by page."""
    while True:
        page = stream_page(store, aggregate_id, after, batch)
        yield from page
        if len(page) < batch:
            return
        after = page[-1].position


def _page(store: EventStore, notes: Sequence[Notification], after: int, limit: int) -> Page:
    items = []
    for note in notes:
        event = store.decode(note, note.id)
        if isinstance(event, DomainEvent):
            items.append(Positioned(note.id, event))
    return Page(items, notes[-1].id if notes else after, len(notes) >= limit)
