"""The event log read in bulk as Arrow columns, for readers that take the records apart
themselves (the analytics projection hands each batch to DuckDB).

`read(after, stop, limit)` gives the stored records after position `after` up to `stop`
(at most `limit`, oldest first) as they are: position, aggregate id, version, topic and the
stored state, never decoded. On a SQLite file and on PostgreSQL the rows go from the
database into Arrow columns inside an ADBC driver (Apache Arrow's database connectivity: C
code that does not hold the interpreter, and on PostgreSQL a binary COPY), so a reader on a
thread of its own leaves the interpreter to the rest of the process. The log in memory, or
a database this release has no driver for, is read through the recorder instead: the same
records, one Python object each on the way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from controlroom.eventstore.postgres import conninfo

if TYPE_CHECKING:
    from controlroom.eventstore.store import EventStore

log = logging.getLogger(__name__)

#: The columns of every batch, whichever way it was read.
RAW_SCHEMA: Final = pa.schema(
    [
        ("position", pa.int64()),
        ("aggregate_id", pa.string()),
        ("version", pa.int64()),
        ("topic", pa.string()),
        ("state", pa.binary()),
    ]
)

ReadArrow = Callable[[int, int, int], pa.Table]


@contextmanager
def arrow_reader(store: EventStore) -> Iterator[ReadArrow]:
    """A bulk reader of `store`'s log; its connection closes when the block ends."""
    table = getattr(store.recorder, "events_table_name", "stored_events")
    path = store.env.get("SQLITE_DBNAME", "")
    if table.isidentifier() and path and not _in_memory(path) and _has("adbc_driver_sqlite"):
        with _sqlite(Path(path), table) as read:
            yield read
        return
    if table.isidentifier() and "POSTGRES_DBNAME" in store.env and _has("adbc_driver_postgresql"):
        with _postgres(store.env, table) as read:
            yield read
        return
    yield _through_recorder(store)


def records_table(records: list[tuple[int, str, int, str, bytes]]) -> pa.Table:
    """Records as Python tuples, in the same columns."""
    columns = list(zip(*records, strict=True)) if records else [() for _ in RAW_SCHEMA]
    arrays = [
        pa.array(column, type=field.type) for column, field in zip(columns, RAW_SCHEMA, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=RAW_SCHEMA)


def _through_recorder(store: EventStore) -> ReadArrow:
    def read(after: int, stop: int, limit: int) -> pa.Table:
        notes = store.recorder.select_notifications(
            start=after, limit=limit, stop=stop, inclusive_of_start=False
        )
        return records_table(
            [(n.id, str(n.originator_id), n.originator_version, n.topic, n.state) for n in notes]
        )

    return read


_SELECT: Final = (
    "SELECT {position} AS position, {aggregate_id} AS aggregate_id, originator_version AS "
    "version, topic, state FROM {table} WHERE {position} > {after} AND {position} <= {stop} "
    "ORDER BY {position} LIMIT {limit}"
)


@contextmanager
def _sqlite(path: Path, table: str) -> Iterator[ReadArrow]:
    import adbc_driver_sqlite.dbapi as adbc_sqlite

    # Read-only: this connection can never write to (or lock for writing) the log.
    conn = adbc_sqlite.connect(path.resolve().as_uri() + "?mode=ro")
    try:
        yield _reading(conn, table, position="rowid", aggregate_id="originator_id")
    finally:
        conn.close()


@contextmanager
def _postgres(env: dict[str, str], table: str) -> Iterator[ReadArrow]:
    import adbc_driver_postgresql.dbapi as adbc_postgres

    schema = env.get("POSTGRES_SCHEMA") or "public"
    conn = adbc_postgres.connect(conninfo(env))
    try:
        conn.adbc_connection.set_autocommit(True)
        yield _reading(
            conn,
            f'"{schema}"."{table}"',
            position="notification_id",
            aggregate_id="originator_id::text",
        )
    finally:
        conn.close()


def _reading(conn: Any, table: str, *, position: str, aggregate_id: str) -> ReadArrow:
    def read(after: int, stop: int, limit: int) -> pa.Table:
        # The bounds are integers written into the text: without bound parameters the
        # PostgreSQL driver reads the result by a binary COPY.
        sql = _SELECT.format(
            position=position,
            aggregate_id=aggregate_id,
            table=table,
            after=int(after),
            stop=int(stop),
            limit=int(limit),
        )
        with conn.cursor() as cursor:
            cursor.execute(sql)
            found: pa.Table = cursor.fetch_arrow_table()
        # An empty result carries no column types (SQLite's driver infers them from the
        # rows), and a driver may name or size types its own way: always the same columns.
        if found.num_rows == 0:
            return RAW_SCHEMA.empty_table()
        return found.rename_columns(RAW_SCHEMA.names).cast(RAW_SCHEMA)

    return read


def _in_memory(path: str) -> bool:
    return path.startswith(":memory:") or "mode=memory" in path


def _has(module: str) -> bool:
    return find_spec(module) is not None
