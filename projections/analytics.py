"""DuckDB analytics: a named projection of the whole log into `.control-room/analytics.duckdb`.

It follows the event log incrementally. Each batch of stored records is read as it is, into
Arrow columns (`eventstore.arrow_log`: on SQLite and PostgreSQL by an ADBC driver, no Python
object per record), handed to DuckDB and loaded into `events` by one statement (no Python
call per row) that splits topic, envelope and payload (`analytics_sql.INGEST`); the batch's
rows are then taken apart by the `INSERT ... SELECT` statements of `analytics_sql.LOADS`,
and committed together with the projection's position in `analytics_tracking`, in the same
DuckDB transaction: a batch is loaded whole or not at all, so a process killed mid-batch
loses and duplicates nothing, and the next catch-up resumes after the last committed batch.
`rebuild` loads the log from zero.

DuckDB lets one process write a file at a time (and not read it while another writes), so the
file is opened for each catch-up, query or export and closed after, and an open that finds the
file locked by another process waits for it. The log may live in SQLite, PostgreSQL or memory:
the projection is the same for all three.

A user's query opens with its own limits (`analytics_limits`): memory, threads, spill space,
the answer's size. Its time limit counts every wait for the file, and the server's requests
run on analytics' own threads (`analytics_pool`), never on the pool that runs share.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final, Self

import duckdb
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from controlroom.domain.errors import BadInputError, StoreUnavailableError
from controlroom.domain.events import EVENT_TYPES, UnknownEventTypeError, parse_topic
from controlroom.eventstore.arrow_log import RAW_SCHEMA, ReadArrow, arrow_reader, records_table
from controlroom.eventstore.config import state_dir
from controlroom.eventstore.store import EventStore
from controlroom.projections.analytics_batches import ROW_GROUP, BatchSizer
from controlroom.projections.analytics_limits import AnalyticsResources
from controlroom.projections.analytics_pool import QueryPool
from controlroom.projections.analytics_query import (
    LOCK_WAIT_S,
    AnalyticsResult,
    FileBusyError,
    QueryLimits,
    QueryTicket,
    connect_waiting,
    read_only,
    run_checked,
)
from controlroom.projections.analytics_sql import (
    INGEST,
    LAYOUT,
    LOADS,
    REPORTS,
    TABLE_NAMES,
    TABLES,
    TRACKING,
    VIEW_NAMES,
    VIEWS,
)
from controlroom.projections.analytics_staging import split_envelopes
from controlroom.projections.models import ProjectionStatus

log = logging.getLogger("controlroom.analytics")

NAME: Final = "analytics"
FILE_NAME: Final = "analytics.duckdb"
#: Most records per batch (one transaction each): one DuckDB row group, fewer when the
#: records are large (`analytics_batches`).
BATCH: Final = ROW_GROUP
#: Test-only fault injection: the process kills itself (SIGKILL) in the middle of its Nth
#: batch, after the rows are loaded and before they commit. Unset in normal use.
CRASH_IN_BATCH_VAR: Final = "CONTROLROOM_ANALYTICS_CRASH_IN_BATCH"
#: No extension is ever fetched at run time: JSON and Parquet are built into the wheel.
NO_DOWNLOADS: Final = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
}

#: The writer checkpoints when it closes, not after every batch's commit: a batch commits to
#: the write-ahead log, and the table data is compressed once per catch-up.
WRITER: Final = {**NO_DOWNLOADS, "checkpoint_threshold": "1GB"}

# One DuckDB file is opened by one connection at a time in this process: DuckDB refuses a
# read-only and a read-write open of the same file side by side.
_FILE_LOCKS: dict[Path, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: Path) -> threading.RLock:
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(path.resolve(), threading.RLock())


def analytics_path(workspace: Path) -> Path:
    return state_dir(workspace) / FILE_NAME


class AnalyticsProjection:
    """The analytics file of one store; `path` None keeps it in a temporary folder (for an
    in-memory store, whose log dies with the process too)."""

    name: Final = NAME

    def __init__(
        self, store: EventStore, path: Path | None, resources: AnalyticsResources | None = None
    ) -> None:
        self.store = store
        self.resources = resources or AnalyticsResources()
        self._pool = QueryPool(self.resources.workers, self.resources.queue)
        self._tmp: str | None = None
        if path is None:
            self._tmp = tempfile.mkdtemp(prefix="controlroom-analytics-")
            path = Path(self._tmp) / FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = _file_lock(path)
        self._batches = 0
        raw = os.environ.get(CRASH_IN_BATCH_VAR, "").strip()
        self._crash_in_batch = int(raw) if raw.isdigit() else None
        #: The position last committed by this object: skips opening the file when the log
        #: has not moved (the server's loop asks often).
        self._seen = -1

    @classmethod
    def for_workspace(
        cls, store: EventStore, workspace: Path, resources: AnalyticsResources | None = None
    ) -> AnalyticsProjection:
        durable = store.backend != "memory"
        return cls(store, analytics_path(workspace) if durable else None, resources)

    # -- following the log -------------------------------------------------------------------

    def catch_up(self, batch_size: int = BATCH, *, wait: bool = True) -> int:
        """Load every event recorded since the tracked position; returns how many.
        `wait` False: return 0 at once when a query of this process or another process holds
        the file (the server's loop comes back soon anyway)."""
        if self._up_to_date():
            return 0
        if not self._lock.acquire(blocking=wait):
            return 0
        try:
            return self._catch_up_held(batch_size, LOCK_WAIT_S if wait else 0)
        except FileBusyError:
            if wait:
                raise
            return 0
        finally:
            self._lock.release()

    def rebuild(self, batch_size: int = BATCH) -> int:
        """Drop every table and load the whole log again."""
        with self._writing() as con:
            self._in_transaction(con, lambda: self._reset(con))
            return self._follow(con, batch_size)

    def status(self) -> ProjectionStatus:
        head = self.store.max_position()
        with self._reading() as con:
            rows = con.execute(
                "SELECT position FROM analytics_tracking WHERE name = ?", [NAME]
            ).fetchall()
        position = int(rows[0][0]) if rows else 0
        return ProjectionStatus(name=NAME, position=position, head=head, lag=head - position)

    # -- reading -----------------------------------------------------------------------------

    def query(self, sql: str, limits: QueryLimits | None = None) -> AnalyticsResult:
        """Run one user SELECT on a read-only connection with file access disabled, in this
        thread (the CLI's); its time limit counts the wait for the file."""
        limits = limits or QueryLimits()
        return self._answer(sql, limits, QueryTicket(limits.timeout_s), catch_up=False)

    async def ask(self, sql: str, limits: QueryLimits | None = None) -> AnalyticsResult:
        """Catch up, then run one user SELECT, on analytics' own threads (the server's way):
        refused at once (`AnalyticsBusyError`) when too many already run or wait, and
        answered by its time limit whatever it waits for."""
        limits = limits or QueryLimits()
        ticket = QueryTicket(limits.timeout_s)
        work = partial(self._answer, sql, limits, ticket, catch_up=True)
        return await self._pool.run(work, ticket)

    @property
    def requests_in_flight(self) -> int:
        """The server's requests running or waiting for analytics' threads."""
        return self._pool.in_flight

    @property
    def queries_running(self) -> int:
        """The server's requests whose DuckDB query has started."""
        return self._pool.running

    def report(self, name: str, limits: QueryLimits | None = None) -> AnalyticsResult:
        found = REPORTS.get(name)
        if found is None:
            raise BadInputError(f"unknown report '{name}'; known: {', '.join(REPORTS)}")
        return self.query(found.sql, limits)

    def export_parquet(self, folder: Path) -> list[Path]:
        """Every table and view as `<name>.parquet` in `folder` (created when missing)."""
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        with self._lock:
            self._ensure_exists()
            # Read-only, but with file access: this writes the files the user asked for.
            con = connect_waiting(self.path, read_only=True, config=NO_DOWNLOADS)
            try:
                for table in (*TABLE_NAMES, *VIEW_NAMES):
                    target = folder / f"{table}.parquet"
                    con.execute(
                        f"COPY (SELECT * FROM {table}) TO '{_quoted(target)}' (FORMAT parquet)"
                    )
                    written.append(target)
            finally:
                con.close()
        return written

    def close(self) -> None:
        self._pool.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _answer(
        self, sql: str, limits: QueryLimits, ticket: QueryTicket, *, catch_up: bool
    ) -> AnalyticsResult:
        """One query within `ticket`'s time, the turn at the file and the catch-up included
        (a catch-up is never interrupted: the query after it then says it ran out of time)."""
        if not self._lock.acquire(timeout=ticket.left()):
            raise ticket.timed_out()
        try:
            if catch_up and not self._up_to_date():
                self._catch_up_held(BATCH, ticket.left())
            elif not self.path.exists():
                self._ensure_exists(ticket.left())
            return run_checked(self.path, sql, limits, ticket, self.resources)
        finally:
            self._lock.release()

    def _up_to_date(self) -> bool:
        return self._seen >= 0 and self._seen == self.store.max_position()

    def _catch_up_held(self, batch_size: int, wait_s: float) -> int:
        with self._writing(wait_s) as con:
            return self._follow(con, batch_size)

    @contextmanager
    def _writing(self, wait_s: float = LOCK_WAIT_S) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            con = connect_waiting(self.path, read_only=False, config=WRITER, wait_s=wait_s)
            try:
                self._prepare(con)
                yield con
            finally:
                con.close()

    @contextmanager
    def _reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            self._ensure_exists()
            con = read_only(self.path)
            try:
                yield con
            finally:
                con.close()

    def _ensure_exists(self, wait_s: float = LOCK_WAIT_S) -> None:
        if not self.path.exists():
            with self._writing(wait_s):
                pass

    def _prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        """Bring the file to this layout and this store (else rebuild it from zero)."""
        con.execute(TRACKING)
        rows = con.execute(
            "SELECT layout, source FROM analytics_tracking WHERE name = ?", [NAME]
        ).fetchall()
        if not rows or rows[0] != (LAYOUT, self.store.location()):
            self._in_transaction(con, lambda: self._reset(con))

    def _reset(self, con: duckdb.DuckDBPyConnection) -> None:
        for view in VIEW_NAMES:
            con.execute(f"DROP VIEW IF EXISTS {view}")
        for table in TABLE_NAMES:
            con.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in (*TABLES, *VIEWS):
            con.execute(statement)
        con.execute(
            "INSERT OR REPLACE INTO analytics_tracking VALUES (?, 0, ?, ?)",
            [NAME, LAYOUT, self.store.location()],
        )
        self._seen = -1

    def _follow(self, con: duckdb.DuckDBPyConnection, batch_size: int) -> int:
        """Load batch after batch up to the log's head as it is now, each in a transaction
        of its own with the new position."""
        rows = con.execute(
            "SELECT position FROM analytics_tracking WHERE name = ?", [NAME]
        ).fetchall()
        position = int(rows[0][0]) if rows else 0
        head = self.store.max_position()
        if position > head:
            log.warning("analytics is ahead of the log: rebuilding it")
            self._in_transaction(con, lambda: self._reset(con))
            position = 0
        loaded = 0
        # The log is read on a thread of its own, a batch ahead, while DuckDB loads the
        # previous one: the two overlap on two cores, neither holding the interpreter for
        # long (the ADBC drivers read into Arrow in C; DuckDB scans Arrow in C).
        events_rows = con.execute("SELECT count(*) FROM events").fetchall()[0][0]
        sizer = BatchSizer(batch_size, int(events_rows))
        with _ReadAhead(self, position, head, sizer) as ahead:
            for batch, new_position in ahead:
                self._in_transaction(con, partial(self._load, con, batch, new_position))
                loaded += batch.count
        self._seen = head
        return loaded

    def _read(self, read: ReadArrow, position: int, head: int, limit: int) -> StagedBatch:
        if position >= head:
            return StagedBatch.of(RAW_SCHEMA.empty_table())
        try:
            records = read(position, head, limit)
        except Exception as exc:
            raise StoreUnavailableError(f"cannot read the event log: {exc}") from exc
        return StagedBatch.of(as_text(upcast_old_shapes(records)))

    def _load(self, con: duckdb.DuckDBPyConnection, batch: StagedBatch, new_position: int) -> None:
        """One batch and its position, in the caller's transaction."""
        if batch.count:
            con.register("raw_batch", batch.columns)
            try:
                for statement in INGEST:
                    con.execute(statement)
            finally:
                con.unregister("raw_batch")
            span = {"first": batch.first_position, "last": batch.last_position}
            for statement in LOADS:
                con.execute(statement, span)
            self._batches += 1
            if self._crash_in_batch is not None and self._batches >= self._crash_in_batch:
                os.kill(os.getpid(), signal.SIGKILL)
        con.execute(
            "UPDATE analytics_tracking SET position = ? WHERE name = ?", [new_position, NAME]
        )

    @staticmethod
    def _in_transaction(con: duckdb.DuckDBPyConnection, work: Callable[[], None]) -> None:
        con.execute("BEGIN")
        try:
            work()
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


@dataclass(frozen=True)
class StagedBatch:
    """A batch of stored records as Arrow columns, which DuckDB scans without the
    interpreter (read on the reading thread, while the previous batch loads)."""

    count: int
    first_position: int
    last_position: int
    #: The stored states' size, in bytes (what the batches' sizes are kept under).
    state_bytes: int
    columns: pa.Table

    @classmethod
    def of(cls, records: pa.Table) -> StagedBatch:
        """The stored records (their states as text), taken apart for DuckDB."""
        count = records.num_rows
        positions = records.column("position")
        first, last = (positions[0].as_py(), positions[-1].as_py()) if count else (0, 0)
        state_bytes = records.column("state").nbytes
        return cls(count, first, last, state_bytes, split_envelopes(records))


class _ReadAhead:
    """Batches of the log from `position` up to `head`, read on a thread of its own at most
    `_AHEAD` batches ahead of the loader; yields (batch, position after it). The reader's
    error is raised in the loader; a loader that stops early stops the reader."""

    _AHEAD: Final = 1

    def __init__(
        self, projection: AnalyticsProjection, position: int, head: int, sizer: BatchSizer
    ) -> None:
        self._projection = projection
        self._position, self._head, self._sizer = position, head, sizer
        self._queue: queue.Queue[tuple[StagedBatch, int, bool] | BaseException] = queue.Queue(
            self._AHEAD
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read_all, name="analytics-read", daemon=True)

    def __enter__(self) -> _ReadAhead:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:  # unblock a reader waiting to hand over a batch
                self._queue.get_nowait()
        self._thread.join()

    def __iter__(self) -> Iterator[tuple[StagedBatch, int]]:
        while True:
            item = self._queue.get()
            if isinstance(item, BaseException):
                raise item
            batch, new_position, done = item
            yield batch, new_position
            if done:
                return

    def _read_all(self) -> None:
        position = self._position
        try:
            with arrow_reader(self._projection.store) as read:
                while not self._stop.is_set():
                    limit = self._sizer.next_limit()
                    batch = self._projection._read(read, position, self._head, limit)
                    self._sizer.took(batch.count, batch.state_bytes)
                    done = batch.count < limit
                    new_position = self._head if done else batch.last_position
                    if not self._hand_over((batch, new_position, done)) or done:
                        return
                    position = new_position
        except BaseException as exc:  # handed to the loader, which raises it
            self._hand_over(exc)

    def _hand_over(self, item: tuple[StagedBatch, int, bool] | BaseException) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


def upcast_old_shapes(records: pa.Table) -> pa.Table:
    """Records stored in a shape older than this release reads are upcast (rare: the rest
    pass untouched); one that cannot be read is kept as stored, so its payload still shows."""
    old = {topic for topic in pc.unique(records.column("topic")).to_pylist() if _is_old(topic)}
    if not old:
        return records
    upcast = []
    for position, aggregate_id, version, topic, state in zip(
        *(column.to_pylist() for column in records.columns), strict=True
    ):
        if topic in old:
            with contextlib.suppress(UnknownEventTypeError, orjson.JSONDecodeError):
                state = orjson.dumps(EVENT_TYPES.upcast_data(topic, state)[1])
        upcast.append((position, aggregate_id, version, topic, state))
    return records_table(upcast)


def as_text(records: pa.Table) -> pa.Table:
    """The stored states as text, checked as UTF-8 here on the reading thread (in C, while
    DuckDB loads the batch before), not decoded by DuckDB on the loading one. A record that
    is not UTF-8 (damaged by hand or by the disk) is kept with its bad bytes replaced."""
    states = records.column("state")
    try:
        text = states.cast(pa.string())
    except pa.ArrowInvalid:
        text = pa.array(
            [state.decode("utf-8", "replace") for state in states.to_pylist()], pa.string()
        )
    return records.set_column(records.schema.get_field_index("state"), "state", text)


def _is_old(topic: str) -> bool:
    name, shape = parse_topic(topic)
    return shape != _current_shape(name)


def _current_shape(name: str) -> int:
    try:
        return EVENT_TYPES.get(name).class_version
    except UnknownEventTypeError:
        return 1


def _quoted(path: Path) -> str:
    return str(path.resolve()).replace("'", "''")
