"""DuckDB analytics: a named projection of the whole log into `.control-room/analytics.duckdb`.

It follows the event log incrementally. Each batch of stored records is read as it is, into
Arrow columns (`eventstore.arrow_log`: on SQLite and PostgreSQL by an ADBC driver, no Python
object per record), and made ready on a thread of its own (`StagedBatch`): the envelope cut
out of each record (`analytics_staging`), and each event type's rows picked out and their
payloads parsed, by an in-memory DuckDB, into the rows of the tables derived from them
(`analytics_sql.LOADS`). The loader stores the records in `events` by one statement (no
Python call per row, `analytics_sql.INGEST`) and the derived rows in their tables, and
commits them together with the projection's position in `analytics_tracking`, in the same
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
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Final, Self, TypeVar

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
    NOT_JSON,
    REPORTS,
    TABLE_NAMES,
    TABLES,
    TRACKING,
    VIEW_NAMES,
    VIEWS,
    parse,
    ranged_sql,
)
from controlroom.projections.analytics_staging import (
    drop_payloads,
    rows_of_types,
    split_envelopes,
)
from controlroom.projections.models import ProjectionStatus

log = logging.getLogger("controlroom.analytics")

_Item = TypeVar("_Item")

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

#: The staging thread's in-memory DuckDB, which works out the derived tables' rows: one
#: thread (the loader's DuckDB and the log's reader keep the other core busy).
DERIVER: Final[dict[str, str | bool | int | float | list[str]]] = {**NO_DOWNLOADS, "threads": 1}

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

    def report(
        self,
        name: str,
        limits: QueryLimits | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> AnalyticsResult:
        """A built-in report, over what happened from `since` to `until` when given."""
        found = REPORTS.get(name)
        if found is None:
            raise BadInputError(f"unknown report '{name}'; known: {', '.join(REPORTS)}")
        if (since is not None or until is not None) and not found.time_range:
            raise BadInputError(f"the report '{name}' cannot be restricted to a time range")
        return self.query(ranged_sql(found, since, until), limits)

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
        # Each name dropped as what it is in the file: a name can change kind between
        # layouts (`agent_calls`, a table until layout 15, is now a view over the table
        # `agent_calls_all`).
        found = dict(
            con.execute(
                "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal "
                "UNION ALL SELECT table_name, 'TABLE' FROM duckdb_tables()"
            ).fetchall()
        )
        names = dict.fromkeys((*VIEW_NAMES, *TABLE_NAMES))
        for kind in ("VIEW", "TABLE"):
            for name in names:
                if found.get(name) == kind:
                    con.execute(f"DROP {kind} {name}")
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

    def _read(self, read: ReadArrow, position: int, head: int, limit: int) -> pa.Table:
        if position >= head:
            return RAW_SCHEMA.empty_table()
        try:
            return read(position, head, limit)
        except Exception as exc:
            raise StoreUnavailableError(f"cannot read the event log: {exc}") from exc

    def _load(self, con: duckdb.DuckDBPyConnection, batch: StagedBatch, new_position: int) -> None:
        """One batch and its position, in the caller's transaction."""
        if batch.count:
            con.register("raw_batch", batch.columns)
            try:
                for statement in INGEST:
                    con.execute(statement)
            finally:
                con.unregister("raw_batch")
            for table, rows in batch.derived:
                con.register("derived_rows", rows)
                try:
                    con.execute(f"INSERT INTO {table} SELECT * FROM derived_rows")
                finally:
                    con.unregister("derived_rows")
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
    interpreter, and the rows of every derived table, worked out from them by an in-memory
    DuckDB of the staging thread's own (`analytics_sql.LOADS`): the payloads are parsed
    there, while the previous batch loads, and the loader only stores typed rows."""

    count: int
    #: The stored states' size, in bytes (what the batches' sizes are kept under).
    state_bytes: int
    #: Every record, for `events`.
    columns: pa.Table
    #: The rows of each derived table (in the order of `analytics_sql.LOADS`; a table
    #: may come more than once), none empty.
    derived: tuple[tuple[str, pa.Table], ...]

    @classmethod
    def of(cls, records: pa.Table, derive: duckdb.DuckDBPyConnection) -> StagedBatch:
        """The stored records (their states as text), taken apart for DuckDB; `derive`
        works out the derived tables' rows, and checks the payloads are JSON."""
        state_bytes = records.column("state").nbytes
        columns = split_envelopes(records)
        derived, not_json = _derive(derive, columns)
        columns = drop_payloads(columns, not_json)
        return cls(records.num_rows, state_bytes, columns, derived)


#: The loads by the rows they parse, in order (two loads of one shape parse them once).
_PARSES: Final = tuple(
    (types, shape, tuple(load for load in LOADS if (load.types, load.shape) == (types, shape)))
    for types, shape in dict.fromkeys((load.types, load.shape) for load in LOADS)
)


def _derive(
    derive: duckdb.DuckDBPyConnection, columns: pa.Table
) -> tuple[tuple[tuple[str, pa.Table], ...], pa.Array]:
    """The rows of every derived table (by table, in the order of `LOADS`, none empty), and
    the positions of the records whose payload is not JSON. Every payload is parsed once:
    into its loads' shape, or only checked when no table is derived from it."""
    rows, other = rows_of_types(columns, (types for types, _, _ in _PARSES))
    derived: list[tuple[str, pa.Table]] = []
    not_json: list[pa.ChunkedArray] = []
    for types, shape, loads in ((None, None, ()), *_PARSES):
        given = other if types is None else rows[types]
        if not given.num_rows:
            continue
        derive.register("load_rows", given)
        try:
            if shape is None:
                not_json.append(derive.sql(NOT_JSON).to_arrow_table().column(0))
                continue
            derive.execute(f"CREATE OR REPLACE TEMP TABLE parsed AS {parse(shape)}")
        finally:
            derive.unregister("load_rows")
        for load in loads:
            found = derive.sql(load.select).to_arrow_table()
            if found.num_rows:
                derived.append((load.table, found))
        unparsed = derive.sql("SELECT position FROM parsed WHERE not_json").to_arrow_table()
        not_json.append(unparsed.column(0))
    derive.execute("DROP TABLE IF EXISTS parsed")
    return tuple(derived), pa.chunked_array(not_json, pa.int64()).combine_chunks()


class _ReadAhead:
    """Batches of the log from `position` up to `head`, made ready ahead of the loader by two
    threads of their own: one reads the records (so the log's reader, a process streaming
    them on SQLite, does not wait for the rest), the other takes each batch apart
    (`StagedBatch.of`); yields (batch, position after it). Each holds at most `_AHEAD`
    batches ready for the next, and the reader reads a batch only when there is room for it
    (every batch is held in memory whole: four at most, one in each place). An error of
    either is raised in the loader; a loader that stops early stops both."""

    _AHEAD: Final = 1

    def __init__(
        self, projection: AnalyticsProjection, position: int, head: int, sizer: BatchSizer
    ) -> None:
        self._projection = projection
        self._position, self._head, self._sizer = position, head, sizer
        self._read: queue.Queue[tuple[pa.Table, int, bool] | BaseException] = queue.Queue(
            self._AHEAD
        )
        self._staged: queue.Queue[tuple[StagedBatch, int, bool] | BaseException] = queue.Queue(
            self._AHEAD
        )
        self._room = threading.Semaphore(self._AHEAD)  # for batches read, not yet staged
        self._stop = threading.Event()
        self._threads = (
            threading.Thread(target=self._read_all, name="analytics-read", daemon=True),
            threading.Thread(target=self._stage_all, name="analytics-stage", daemon=True),
        )

    def __enter__(self) -> _ReadAhead:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for handed in (self._read, self._staged):
            with contextlib.suppress(queue.Empty):
                while True:  # unblock a thread waiting to hand over a batch
                    handed.get_nowait()
        for thread in self._threads:
            thread.join()

    def __iter__(self) -> Iterator[tuple[StagedBatch, int]]:
        while True:
            item = self._staged.get()
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
                    if not self._room.acquire(timeout=0.1):
                        continue
                    limit = self._sizer.next_limit()
                    records = self._projection._read(read, position, self._head, limit)
                    count = records.num_rows
                    self._sizer.took(count, records.column("state").nbytes)
                    done = count < limit
                    new_position = self._head if done else records.column("position")[-1].as_py()
                    if not self._hand_over(self._read, (records, new_position, done)) or done:
                        return
                    position = new_position
        except BaseException as exc:  # handed on to the loader, which raises it
            self._hand_over(self._read, exc)

    def _stage_all(self) -> None:
        try:
            with contextlib.closing(duckdb.connect(config=DERIVER)) as derive:
                while (item := self._take(self._read)) is not None:
                    self._room.release()
                    if isinstance(item, BaseException):
                        self._hand_over(self._staged, item)
                        return
                    records, new_position, done = item
                    batch = StagedBatch.of(as_text(upcast_old_shapes(records)), derive)
                    if not self._hand_over(self._staged, (batch, new_position, done)) or done:
                        return
        except BaseException as exc:  # handed to the loader, which raises it
            self._hand_over(self._staged, exc)

    def _take(self, handed: queue.Queue[_Item]) -> _Item | None:
        while not self._stop.is_set():
            try:
                return handed.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def _hand_over(self, handed: queue.Queue[_Item], item: _Item) -> bool:
        while not self._stop.is_set():
            try:
                handed.put(item, timeout=0.1)
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
