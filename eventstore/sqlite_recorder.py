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

from eventsourcing.persistence import Notification
from eventsourcing.sqlite import SQLiteDatastore, SQLiteProcessRecorder

#: Above every position SQLite hands out (a rowid is a signed 64-bit integer).
_NO_STOP: Final = 2**63 - 1


class TopicIndexedSQLiteRecorder(SQLiteProcessRecorder):
    def __init__(
        self, datastore: SQLiteDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self._by_topic: dict[tuple[int, bool], str] = {}

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
