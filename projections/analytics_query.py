"""The safe SQL surface of the analytics file: what a user's query may do, and its limits.

A query runs on a connection of its own, opened read-only with every file and network access
disabled and the configuration locked, and is refused before it runs unless it is exactly one
`SELECT` (which includes `WITH`, `VALUES`, `FROM ...`, `DESCRIBE`, `SHOW` and `SUMMARIZE`).
So writes, `ATTACH`, `COPY`, `EXPORT`, `INSTALL`/`LOAD`, `SET`/`RESET`, `PRAGMA`, `CALL`,
transactions and a second statement behind a `;` each get their own clear error, and a
`SELECT` that reaches for a file (`read_csv`, `glob`) is stopped by DuckDB itself.

A query's time limit counts from when it was asked, waits included: at its end the query is
interrupted (`QueryTicket`). It opens with DuckDB's memory, threads and spill limits
(`analytics_limits`), and its rows are cut past the row limit or once their JSON passes the
size limit, and the result says so. Nothing here can change the file.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import duckdb
import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from controlroom.domain.errors import BadInputError, StoreUnavailableError
from controlroom.projections.analytics_limits import (
    MAX_RESULT_BYTES_VAR,
    MEMORY_LIMIT_VAR,
    TEMP_LIMIT_VAR,
    AnalyticsResources,
)

DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_MAX_ROWS: Final = 10_000
MAX_TIMEOUT_S: Final = 300.0
MAX_ROWS: Final = 1_000_000
#: Rows fetched from DuckDB at a time: the answer stops at its limits without holding more.
_FETCH: Final = 2048

_REFUSED: Final = {
    duckdb.StatementType.INSERT: "writes",
    duckdb.StatementType.UPDATE: "writes",
    duckdb.StatementType.DELETE: "writes",
    duckdb.StatementType.MERGE_INTO: "writes",
    duckdb.StatementType.CREATE: "creating tables, views or macros",
    duckdb.StatementType.CREATE_FUNC: "creating functions",
    duckdb.StatementType.DROP: "dropping tables or views",
    duckdb.StatementType.ALTER: "altering tables",
    duckdb.StatementType.COPY: "COPY (reading or writing files)",
    duckdb.StatementType.COPY_DATABASE: "COPY (reading or writing files)",
    duckdb.StatementType.EXPORT: "EXPORT (writing files)",
    duckdb.StatementType.ATTACH: "ATTACH (opening other databases)",
    duckdb.StatementType.DETACH: "DETACH",
    duckdb.StatementType.LOAD: "INSTALL and LOAD (extensions)",
    duckdb.StatementType.EXTENSION: "INSTALL and LOAD (extensions)",
    duckdb.StatementType.SET: "SET, RESET and USE (settings)",
    duckdb.StatementType.VARIABLE_SET: "SET VARIABLE (settings)",
    duckdb.StatementType.PRAGMA: "PRAGMA (settings and maintenance)",
    duckdb.StatementType.CALL: "CALL (pragmas and maintenance)",
    duckdb.StatementType.VACUUM: "VACUUM (maintenance)",
    duckdb.StatementType.ANALYZE: "ANALYZE (maintenance)",
    duckdb.StatementType.TRANSACTION: "transaction control",
    duckdb.StatementType.PREPARE: "PREPARE",
    duckdb.StatementType.EXECUTE: "EXECUTE",
}


_SAFE: Final = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
#: How long an open waits for another process that holds the file.
LOCK_WAIT_S: Final = 30.0


class AnalyticsQueryError(BadInputError):
    """A user's SQL was refused, failed, or ran past its time limit."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class QueryLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    timeout_s: float = Field(
        default=DEFAULT_TIMEOUT_S,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="the query is interrupted this many seconds after it was asked (time "
        "spent waiting for other queries counts)",
    )
    max_rows: int = Field(
        default=DEFAULT_MAX_ROWS,
        ge=1,
        le=MAX_ROWS,
        description="rows past this many are not returned (`truncated` says so)",
    )


class AnalyticsResult(BaseModel):
    """The answer to one analytics query or report."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    columns: list[str]
    types: list[str] = Field(description="DuckDB type of each column")
    rows: list[list[JsonValue]]
    row_count: int = Field(description="rows returned (at most the row limit)")
    truncated: bool = Field(
        description="true when rows were cut: past the row limit, or the answer's size limit"
    )
    elapsed_ms: float
    note: str | None = Field(default=None, description="why the rows were cut, when they were")


#: How often a cancelled query's connection is interrupted again until the query ends.
_REINTERRUPT_S = 0.05


class QueryTicket:
    """One query's time limit, counted from when it was asked (waiting for a thread or for
    the file included), and the way to stop it from another thread: `cancel` interrupts the
    DuckDB query it runs, if it runs one yet."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self._guard = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._started = False
        self._cancelled = False

    @property
    def started(self) -> bool:
        """True once its DuckDB query runs (it may have ended since)."""
        return self._started

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def left(self) -> float:
        """The seconds left; the timeout error when none are (or the ticket was cancelled)."""
        remaining = self.remaining()
        if remaining <= 0 or self._cancelled:
            raise self.timed_out()
        return remaining

    @contextmanager
    def running(self, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
        """While the query runs on `con`, `cancel` (and the deadline) interrupts it."""
        with self._guard:
            if self._cancelled:
                raise self.timed_out()
            self._con, self._started = con, True
        timer = threading.Timer(self.remaining(), self.cancel)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            with self._guard:
                self._con = None

    def cancel(self) -> None:
        with self._guard:
            self._cancelled = True
            con = self._con
        if con is None:
            return  # not started: `running` refuses to start it
        # DuckDB forgets an interrupt that comes before its query starts executing (the
        # ticket counts as started a moment earlier): interrupt again until the query lets
        # go of the connection, so a stop in that moment is not lost for the whole limit.
        threading.Thread(target=self._interrupt_until_released, args=(con,), daemon=True).start()

    def _interrupt_until_released(self, con: duckdb.DuckDBPyConnection) -> None:
        while True:
            with self._guard:
                if self._con is not con:
                    return
                with suppress(duckdb.Error):  # closed meanwhile: nothing left to stop
                    con.interrupt()
            time.sleep(_REINTERRUPT_S)

    def timed_out(self) -> AnalyticsQueryError:
        if self._cancelled and self.remaining() > 0:
            return AnalyticsQueryError(
                "query_cancelled",
                "the query was stopped before its time limit (the server is stopping, or the "
                "client went away)",
            )
        if self._started:
            return AnalyticsQueryError(
                "query_timeout",
                f"the query ran past its time limit of {self.timeout_s:g}s and was stopped "
                "(raise it with --timeout, or timeout_s over HTTP)",
            )
        return AnalyticsQueryError(
            "query_timeout",
            f"the query waited its whole time limit of {self.timeout_s:g}s for its turn at the "
            "analytics file (other queries, or catching up with the log) and did not start: the "
            "limit counts the wait; try again, or raise it with --timeout, or timeout_s over HTTP",
        )


class FileBusyError(StoreUnavailableError):
    """Another process holds the analytics file (a catch-up or a rebuild) for too long."""


def connect_waiting(
    path: Path, *, read_only: bool, config: Mapping[str, Any], wait_s: float = LOCK_WAIT_S
) -> duckdb.DuckDBPyConnection:
    """Open the file, waiting up to `wait_s` while another process holds it: DuckDB lets one
    process write a file, and nobody read it meanwhile."""
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=dict(config))
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise StoreUnavailableError(f"cannot open {path}: {_first_line(exc)}") from None
            if time.monotonic() >= deadline:
                raise FileBusyError(
                    f"{path} is held by another process (a catch-up or a rebuild); "
                    f"try again: {_first_line(exc)}"
                ) from None
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def read_only(
    path: Path, resources: AnalyticsResources | None = None, wait_s: float = LOCK_WAIT_S
) -> duckdb.DuckDBPyConnection:
    """A connection that cannot change the file, read another file or reach the network;
    with `resources`, within their memory, threads and spill space (which DuckDB puts in
    `<file>.tmp`: with file access disabled no other folder may be named)."""
    config = {**_SAFE, **(resources.duckdb_config() if resources else {})}
    return connect_waiting(path, read_only=True, config=config, wait_s=wait_s)


def check_sql(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but exactly one SELECT, naming what was refused."""
    if not sql.strip():
        raise AnalyticsQueryError("empty_sql", "the query is empty")
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise AnalyticsQueryError("sql_error", _first_line(exc)) from None
    if len(statements) != 1:
        raise AnalyticsQueryError(
            "refused_sql",
            f"one statement per query: found {len(statements)} (separated by ';')"
            if statements
            else "the query has no statement",
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        what = _REFUSED.get(kind, kind.name)
        raise AnalyticsQueryError(
            "refused_sql",
            f"analytics queries are read-only: {what} is not allowed (only SELECT)",
        )


def run_checked(
    path: Path, sql: str, limits: QueryLimits, ticket: QueryTicket, resources: AnalyticsResources
) -> AnalyticsResult:
    con = read_only(path, resources, wait_s=ticket.left())
    try:
        check_sql(con, sql)
        return _run(con, sql, limits, ticket, resources)
    finally:
        con.close()


def _run(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    limits: QueryLimits,
    ticket: QueryTicket,
    resources: AnalyticsResources,
) -> AnalyticsResult:
    started = time.perf_counter()
    try:
        with ticket.running(con):
            cursor = con.execute(sql)
            columns = [d[0] for d in cursor.description or []]
            types = [str(d[1]) for d in cursor.description or []]
            rows, note = _fetch(cursor, limits, resources.max_result_bytes)
    except duckdb.InterruptException:
        raise ticket.timed_out() from None
    except duckdb.OutOfMemoryException as exc:
        raise AnalyticsQueryError(
            "query_memory_limit",
            f"the query needed more memory than analytics allows ({resources.memory_limit} "
            f"in memory and {resources.temp_limit} spilled to disk; {MEMORY_LIMIT_VAR} and "
            f"{TEMP_LIMIT_VAR}) and was stopped: aggregate or filter more, or select fewer "
            f"columns ({_first_line(exc)})",
        ) from None
    except duckdb.PermissionException as exc:
        raise AnalyticsQueryError(
            "refused_sql",
            f"analytics queries cannot read or write files: {_first_line(exc)}",
        ) from None
    except duckdb.Error as exc:
        raise AnalyticsQueryError("sql_error", _first_line(exc)) from None
    return AnalyticsResult(
        columns=columns,
        types=types,
        rows=rows,
        row_count=len(rows),
        truncated=note is not None,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        note=note,
    )


def _fetch(
    cursor: duckdb.DuckDBPyConnection, limits: QueryLimits, max_bytes: int
) -> tuple[list[list[JsonValue]], str | None]:
    """The rows up to the row limit and the size limit (their JSON, as the server sends it),
    and why they were cut when they were. DuckDB streams them: nothing past is computed."""
    rows: list[list[JsonValue]] = []
    size = 0
    while True:
        chunk = cursor.fetchmany(min(_FETCH, limits.max_rows + 1 - len(rows)))
        if not chunk:
            return rows, None
        for fetched in chunk:
            if len(rows) == limits.max_rows:
                return rows, (
                    f"only the first {limits.max_rows} rows are shown (the row limit; raise "
                    "it with --max-rows, or max_rows over HTTP)"
                )
            row = [_jsonable(v) for v in fetched]
            size += _json_size(row)
            if size > max_bytes:
                return rows, (
                    f"only the first {len(rows)} rows are shown: the next would take the "
                    f"answer past its size limit of {_bytes(max_bytes)} "
                    f"({MAX_RESULT_BYTES_VAR}); select fewer rows or columns, or export "
                    "with `controlroom analytics export --parquet`"
                )
            rows.append(row)


def _json_size(row: list[JsonValue]) -> int:
    try:
        return len(orjson.dumps(row)) + 1
    except orjson.JSONEncodeError:  # an integer past 64 bits (HUGEINT): rare
        return len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode()) + 1


def _bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{round(size, 1):g} {unit}"
        size /= 1024
    return f"{round(size, 1):g} GiB"


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _jsonable(value: Any) -> JsonValue:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)
