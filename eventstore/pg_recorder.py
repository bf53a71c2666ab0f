"""The PostgreSQL process recorder, with large commits sent outside pipeline mode.

The library inserts a commit's events in psycopg's pipeline mode (lock the table, notify,
insert, then one sync): few round trips, which is what a step's small commit wants. But a
commit of a few megabytes (a group commit of many runs, a chapter-sized slot, a bulk copy)
hung in pipeline mode on this machine's psycopg 3.3 and PostgreSQL 15: the server waited
for the rest of the INSERT while the client waited for its results (a 1.3 MB commit went
through, 5.3 MB never did). Commits above `PIPELINED_MAX_BYTES` run the same statements in
the same transaction one after another instead. Selected through the library's own seam,
`PROCESS_RECORDER_TOPIC` (`postgres.postgres_env`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresProcessRecorder
from eventsourcing.utils import retry

#: Stored bytes up to which a commit is pipelined (a step's commit is a few kilobytes).
PIPELINED_MAX_BYTES: Final = 256 * 1024


class LargeCommitSafeRecorder(PostgresProcessRecorder):
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # (The library's retry decorator is untyped: the positions are a list of ints.)
        if sum(len(event.state) for event in stored_events) <= PIPELINED_MAX_BYTES:
            return cast(Sequence[int] | None, super().insert_events(stored_events, **kwargs))
        return cast(Sequence[int] | None, self._insert_unpipelined(stored_events, **kwargs))

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
