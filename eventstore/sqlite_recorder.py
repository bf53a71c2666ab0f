"""The SQLite process recorder: the log read by event type through an index.

A policy or a projection follows a few event types, and reads the log after its position
with `select_notifications(topics=...)`. The library's SQLite table has no index on
`topic`, so that read went through every event between the position and the head to find
the few it wanted: a policy following an event type a store rarely holds read the whole
history on every pass. Here the table gets an index on `topic` (SQLite keeps each entry's
rowid with it, so it is ordered by (topic, position)), created with the table, and added
to a store made before it the first time this release opens it (one pass over the log).

The read asks the index once per type, for at most `limit` positions each, in order, and
takes the first `limit` of them all: its cost is bounded by the batch, never by the stretch
between the position and the head. (One query with `topic IN (...)` lets SQLite gather
every match up to the head before it sorts and cuts them: with a frequent type and a
position far back, that is the whole history per batch.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent, Tracking
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteProcessRecorder

#: Above every position SQLite hands out (a rowid is a signed 64-bit integer).
_NO_STOP: Final = 2**63 - 1
#: Rows in one INSERT statement: four parameters each, well under SQLite's 32,766.
_ROWS_PER_INSERT: Final = 500


class TopicIndexedSQLiteRecorder(SQLiteProcessRecorder):
    def __init__(
        self, datastore: SQLiteDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self._by_topic: dict[tuple[int, bool], str] = {}
        self._inserts: dict[int, str] = {}

    @property
    def topic_index_name(self) -> str:
        return f"{self.events_table_name}_by_topic"

    def construct_create_table_statements(self) -> list[str]:
        statements = super().construct_create_table_statements()
        statements.append(
            f"CREATE INDEX IF NOT EXISTS {self.topic_index_name} "
            f"ON {self.events_table_name} (topic)"
        )
        return statements

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """A commit's events in one statement, their positions returned by it.

        The library inserts them one statement each and asks each one's rowid: a step's
        commit holds four or more events, and each statement costs about as much again as
        the row it writes. The rowids of one INSERT's rows are handed out in the order they
        are inserted, each above every rowid before it (the writer holds the database), so
        their sorted list is the events' positions in order, whatever order RETURNING gives
        them back in.
        """
        positions: list[int] = []
        for start in range(0, len(stored_events), _ROWS_PER_INSERT):
            batch = stored_events[start : start + _ROWS_PER_INSERT]
            params: list[Any] = []
            for event in batch:
                oid = event.originator_id
                params += (oid.hex if isinstance(oid, UUID) else oid, event.originator_version)
                params += (event.topic, event.state)
            c.execute(self._insert_statement(len(batch)), params)
            positions += sorted(row[0] for row in c.fetchall())
        tracking: Tracking | None = kwargs.get("tracking")
        if tracking is not None:
            self._insert_tracking(c, tracking)
        return positions

    def _insert_statement(self, rows: int) -> str:
        found = self._inserts.get(rows)
        if found is None:
            values = ",".join(["(?,?,?,?)"] * rows)
            found = f"INSERT INTO {self.events_table_name} VALUES {values} RETURNING rowid"
            self._inserts[rows] = found
        return found

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        if not topics:
            return super().select_notifications(
                start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )
        wanted = list(dict.fromkeys(topics))
        low = 0 if start is None else start
        high = _NO_STOP if stop is None else stop
        params: list[Any] = []
        for topic in wanted:
            params += [topic, low, high, limit]
        params.append(limit)
        with self.datastore.transaction(commit=False) as c:
            c.execute(self._statement(len(wanted), inclusive_of_start), params)
            return [
                Notification(
                    id=row["rowid"],
                    originator_id=self.convert_originator_id(row["originator_id"]),
                    originator_version=row["originator_version"],
                    topic=row["topic"],
                    state=row["state"],
                )
                for row in c.fetchall()
            ]

    def _statement(self, count: int, inclusive_of_start: bool) -> str:
        key = (count, inclusive_of_start)
        found = self._by_topic.get(key)
        if found is None:
            table, index = self.events_table_name, self.topic_index_name
            low = ">=" if inclusive_of_start else ">"
            one = (
                f"SELECT rowid FROM (SELECT rowid FROM {table} INDEXED BY {index} "
                f"WHERE topic = ? AND rowid {low} ? AND rowid <= ? ORDER BY rowid LIMIT ?)"
            )
            found = (
                f"SELECT rowid, * FROM {table} WHERE rowid IN "
                f"({' UNION ALL '.join([one] * count)}) ORDER BY rowid LIMIT ?"
            )
            self._by_topic[key] = found
        return found
