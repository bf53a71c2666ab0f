"""The event log read in bulk as Arrow columns, for readers that take the records apart
themselves (the analytics projection hands each batch to DuckDB).

`read(after, stop, limit)` gives the stored records after position `after` up to `stop`
(at most `limit`, oldest first) as they are: position, aggregate id, version, topic and the
stored state, never decoded. On PostgreSQL the rows go from the database into Arrow columns
inside Apache Arrow's ADBC driver (a binary COPY, in C, not holding the interpreter). On a
SQLite file, long stretches are streamed by a child process reading with the ADBC SQLite
driver (`arrow_child.py`: that driver links its own SQLite, which must not share a process
with the store's writer) and short ones are read here with `sqlite3`. The log in memory, or
a driver that cannot load, is read through the recorder: the same records, one Python
object each on the way.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
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
#: Stretches of a SQLite log at least this long are streamed by a child process (its start
#: costs a few hundred milliseconds; it reads several times faster).
CHILD_MIN_RECORDS: Final = 50_000
_CHILD: Final = Path(__file__).with_name("arrow_child.py")


@contextmanager
def arrow_reader(store: EventStore) -> Iterator[ReadArrow]:
    """A bulk reader of `store`'s log; its connection closes when the block ends."""
    table = getattr(store.recorder, "events_table_name", "stored_events")
    path = store.env.get("SQLITE_DBNAME", "") if store.backend == "sqlite" else ""
    postgres = store.backend == "postgres"
    with ExitStack() as opened:
        read: ReadArrow | None = None
        try:
            if table.isidentifier() and path and not _in_memory(path):
                read = opened.enter_context(_sqlite(Path(path), table))
            elif table.isidentifier() and postgres and _has("adbc_driver_postgresql"):
                read = opened.enter_context(_postgres(store.env, table))
        except (ImportError, OSError) as exc:
            # A driver that cannot load on this machine (its shared library): the recorder
            # reads the same records, only slower.
            log.warning(
                "cannot load the ADBC driver (%s): reading the log through the recorder", exc
            )
        yield read if read is not None else _through_recorder(store)


def records_table(records: list[tuple[int, str, int, str, bytes | None]]) -> pa.Table:
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
    reader = _SQLiteReader(path, table)
    try:
        yield reader.read
    finally:
        reader.close()


class _SQLiteReader:
    """Short stretches of the log are read here, with Python's own sqlite3 (the ADBC driver
    links a second copy of SQLite, and two copies in one process break each other's file
    locks and the shared memory of the write-ahead log: a reader beside the store's writer
    crashed the process). Long ones, a rebuild or a long catch-up, are streamed by a child
    process that reads with the ADBC driver (`arrow_child.py`), several times faster."""

    def __init__(self, path: Path, table: str) -> None:
        self._path, self._table = path.resolve(), table
        # Read-only: this connection can never write to (or lock for writing) the log.
        self._conn = sqlite3.connect(
            self._path.as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        self._query = _SELECT.format(
            position="rowid", aggregate_id="originator_id", table=table,
            after="?", stop="?", limit="?",
        )  # fmt: skip
        self._child: _ChildStream | None = None
        self._child_works = _has("adbc_driver_sqlite")

    def read(self, after: int, stop: int, limit: int) -> pa.Table:
        child = self._child
        if child is not None and (child.position, child.stop) != (after, stop):
            child.close()
            child = self._child = None
        if child is None and stop - after >= CHILD_MIN_RECORDS and self._child_works:
            try:
                child = self._child = _ChildStream(self._path, self._table, after, stop)
            except OSError as exc:
                log.warning("cannot start the log reader process (%s): reading here", exc)
                self._child_works = False
        if child is not None:
            return child.take(limit)
        return records_table(self._conn.execute(self._query, (after, stop, limit)).fetchall())

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
        self._conn.close()


class _ChildStream:
    """The records after `position` up to `stop`, streamed by `arrow_child.py`."""

    def __init__(self, path: Path, table: str, after: int, stop: int) -> None:
        self.position, self.stop = after, stop
        # Closed in `close` (the stream outlives this call); the child's last words, if any.
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            [sys.executable, str(_CHILD), str(path), table, str(after), str(stop)],
            stdout=subprocess.PIPE,
            stderr=self._errors,
            bufsize=1 << 20,  # the stream is read in large pieces (the default is 8 kB)
        )
        assert self._proc.stdout is not None
        self._stream: Any = None
        self._pending: pa.RecordBatch | None = None
        self._ended = False

    def take(self, limit: int) -> pa.Table:
        parts: list[pa.RecordBatch] = []
        wanted = limit
        while wanted > 0 and not self._ended:
            if self._pending is None or self._pending.num_rows == 0:
                self._pending = self._next()
                if self._pending is None:
                    break
            part = self._pending.slice(0, wanted)
            self._pending = self._pending.slice(part.num_rows)
            parts.append(part)
            wanted -= part.num_rows
        found = pa.Table.from_batches(parts, schema=RAW_SCHEMA)
        if found.num_rows:
            self.position = int(found.column("position")[-1].as_py())
        return found

    def _next(self) -> pa.RecordBatch | None:
        try:
            if self._stream is None:
                self._stream = pa.ipc.open_stream(self._proc.stdout)
            batch: pa.RecordBatch = self._stream.read_next_batch()
            return batch
        except StopIteration:
            pass
        except pa.ArrowInvalid:  # the child died before its stream began or ended
            pass
        self._ended = True
        if self._proc.wait() != 0:
            self._errors.seek(0)
            said = self._errors.read().decode("utf-8", "replace").strip().splitlines()
            raise OSError(f"the log reader process failed: {said[-1] if said else 'no output'}")
        return None

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._errors.close()


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
