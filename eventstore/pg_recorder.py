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

Selected through the library's own seam, `PROCESS_RECORDER_TOPIC` (`postgres.postgres_env`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresProcessRecorder
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composed, Identifier

#: Stored bytes up to which a commit with tracking is pipelined (a step's is a few kB).
PIPELINED_MAX_BYTES: Final = 256 * 1024
#: The function's name carries its version (a release that changes it creates a new one)
#: and the type of the stream ids (`text` as `config.store_env` sets it, or the library's
#: default `uuid`).
INSERT_FUNCTION: Final = "cr_insert_events_v1_{id_type}"


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
