"""The PostgreSQL process recorder: a step's commit in one round trip, large commits sent
outside pipeline mode.

**One round trip.** The library inserts a commit's events in psycopg's pipeline mode:
`BEGIN`, the lock timeout, the table lock, `NOTIFY`, the insert, a sync, then `COMMIT` and
another sync. On this machine that costs about 1 ms a commit, of which the server's work
(the insert and the fsync of its commit) is about a quarter; the rest is the protocol's
exchanges and psycopg's work in Python for each. A commit with no tracking record (every
step of a run) instead calls one function of our own, `cr_insert_events`, created with the
tables: the same lock, notification and insert, in the single statement's own transaction
(the pool's connections are in autocommit), with the events passed as four arrays. The
table lock stays, so positions are still handed out in commit order and a reader following
the log never passes a gap that fills in later. A commit with a tracking record (a policy's
reaction) keeps the library's way, whose tracking rules (one row per application, checked
against migrations) are the library's to keep.

**Large commits.** A commit of a few megabytes (a group commit of many runs, a
chapter-sized slot, a bulk copy) hung in pipeline mode on this machine's psycopg 3.3 and
PostgreSQL 15: the server waited for the rest of the INSERT while the client waited for its
results (a 1.3 MB commit went through, 5.3 MB never did). Commits above
`PIPELINED_MAX_BYTES` with a tracking record run the library's statements in the same
transaction one after another instead.

**Reads by event type.** A policy or a projection reads the log after its position for the
few event types it follows (`select_notifications(topics=...)`). The library's table has no
index on `topic`, so that read went through every event up to the head to find its own.
Here the table gets an index on (topic, notification_id), created with the table (and on a
log made before it, the first time this release opens it), and the read asks it once per
type, for at most `limit` positions each in order, then fetches the first `limit` of them
all: bounded by the batch, never by how far the position is behind the head. The read is a
function of ours, `cr_select_<table>_by_topics_v1`, created with the tables, whose plan
may use neither a bitmap scan nor a sequential scan: with a table's statistics missing or
old (a bulk load, autovacuum off), PostgreSQL otherwise took a bitmap scan, which gathers
every match up to the head before it sorts them (568 ms against 3.6 ms for five frequent
types from position 0 in a log of 514k events).

Selected through the library's own seam, `PROCESS_RECORDER_TOPIC` (`postgres.postgres_env`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresProcessRecorder
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composed, Identifier

#: Stored bytes up to which a commit with tracking is pipelined (a step's is a few kB).
PIPELINED_MAX_BYTES: Final = 256 * 1024
#: The function's name carries its version (a release that changes it creates a new one)
#: and the type of the stream ids (`text` as `config.store_env` sets it, or the library's
#: default `uuid`).
INSERT_FUNCTION: Final = "cr_insert_events_v1_{id_type}"
#: The read by event type, per events table (its rows are the table's).
SELECT_FUNCTION: Final = "cr_select_{table}_by_topics_v1"
#: Above every position PostgreSQL hands out (a bigserial).
_NO_STOP: Final = 2**63 - 1


class LargeCommitSafeRecorder(PostgresProcessRecorder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        schema, table = Identifier(self.datastore.schema), Identifier(self.events_table_name)
        id_type = self.datastore.originator_id_type
        self._insert_function = INSERT_FUNCTION.format(id_type=id_type)
        function = Identifier(self._insert_function)
        self._create_insert_function: Composed = SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}("
            "ids {id_type}[], versions bigint[], topics text[], states bytea[]) "
            "RETURNS SETOF bigint LANGUAGE plpgsql AS $body$ BEGIN "
            "SET LOCAL lock_timeout = '{lock_timeout}s'; "
            "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
            "NOTIFY {channel}; "
            "RETURN QUERY INSERT INTO {schema}.{table} "
            "(originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(ids, versions, topics, states) "
            "RETURNING notification_id; "
            "END $body$"
        ).format(
            schema=schema,
            function=function,
            id_type=SQL(id_type),
            table=table,
            lock_timeout=SQL(str(int(self.datastore.lock_timeout))),
            channel=Identifier(self.channel_name),
        )
        self.topic_index_name = f"{self.events_table_name}_by_topic"
        self.check_identifier_length(self.topic_index_name)
        self.sql_create_statements.append(
            SQL("CREATE INDEX IF NOT EXISTS {index} ON {schema}.{table} (topic, notification_id)")
            .format(index=Identifier(self.topic_index_name), schema=schema, table=table)
        )  # fmt: skip
        select_function = SELECT_FUNCTION.format(table=self.events_table_name)
        self.check_identifier_length(select_function)
        self._create_select_function: Composed = SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}("
            "topics text[], after bigint, upto bigint, lim bigint) "
            "RETURNS SETOF {schema}.{table} LANGUAGE sql STABLE "
            "SET enable_bitmapscan = off SET enable_seqscan = off AS $body$ "
            "SELECT e.* FROM ("
            "SELECT x.n FROM unnest(topics) AS t(topic) CROSS JOIN LATERAL ("
            "SELECT s.notification_id AS n FROM {schema}.{table} s "
            "WHERE s.topic = t.topic AND s.notification_id > after "
            "AND s.notification_id <= upto ORDER BY s.notification_id LIMIT lim) AS x "
            "ORDER BY x.n LIMIT lim) AS ids "
            "JOIN {schema}.{table} e ON e.notification_id = ids.n "
            "ORDER BY e.notification_id $body$"
        ).format(schema=schema, function=Identifier(select_function), table=table)
        self._call_select_function: Composed = SQL(
            "SELECT * FROM {schema}.{function}(%s::text[], %s, %s, %s)"
        ).format(schema=schema, function=Identifier(select_function))
        self._call_insert_function: Composed = SQL(
            "SELECT * FROM {schema}.{function}("
            "%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])"
        ).format(schema=schema, function=function, id_type=SQL(id_type))

    def create_table(self) -> None:
        super().create_table()
        # (Run under `postgres.prepared_schema`'s lock: two processes replacing one function
        # at the same instant fail with "tuple concurrently updated".)
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(self._create_insert_function, prepare=False)
            curs.execute(self._create_select_function, prepare=False)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # (The library's retry decorator is untyped: the positions are a list of ints.)
        if kwargs.get("tracking") is None and stored_events:
            return cast(Sequence[int], self._insert_in_one_statement(stored_events))
        if sum(len(event.state) for event in stored_events) <= PIPELINED_MAX_BYTES:
            return cast(Sequence[int] | None, super().insert_events(stored_events, **kwargs))
        return cast(Sequence[int] | None, self._insert_unpipelined(stored_events, **kwargs))

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _insert_in_one_statement(self, stored_events: Sequence[StoredEvent]) -> Sequence[int]:
        params = (
            [event.originator_id for event in stored_events],
            [event.originator_version for event in stored_events],
            [event.topic for event in stored_events],
            [event.state for event in stored_events],
        )
        with self.datastore.get_connection() as conn:
            rows = conn.execute(self._call_insert_function, params, prepare=True).fetchall()
        return [row[self._insert_function] for row in rows]

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _insert_unpipelined(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # What the library's pipelined insert does, statement by statement: the tracking
        # record, the table lock (commit order = position order), the notification, the
        # events; then their positions.
        with (
            self.datastore.get_connection() as conn,
            conn.transaction(),
            conn.cursor() as curs,
        ):
            self._insert_events(curs, stored_events, **kwargs)
            self._insert_stored_events(curs, stored_events, **kwargs)
            return self._fetch_ids_after_insert_events(curs, stored_events, **kwargs)

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
            return cast(
                Sequence[Notification],
                super().select_notifications(
                    start, limit, stop, topics, inclusive_of_start=inclusive_of_start
                ),
            )
        return cast(
            Sequence[Notification],
            self._select_by_topics_now(start, limit, stop, topics, inclusive_of_start),
        )

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _select_by_topics_now(
        self,
        start: int | None,
        limit: int,
        stop: int | None,
        topics: Sequence[str],
        inclusive_of_start: bool,
    ) -> Sequence[Notification]:
        after = 0 if start is None else start - 1 if inclusive_of_start else start
        params = (list(dict.fromkeys(topics)), after, _NO_STOP if stop is None else stop, limit)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(self._call_select_function, params, prepare=True)
            return [
                Notification(
                    id=row["notification_id"],
                    originator_id=row["originator_id"],
                    originator_version=row["originator_version"],
                    topic=row["topic"],
                    state=bytes(row["state"]),
                )
                for row in curs.fetchall()
            ]
