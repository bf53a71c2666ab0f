"""The safe SQL surface of the analytics file: what a user's query may do, and its limits.

A query runs on a connection of its own, opened read-only with every file and network access
disabled and the configuration locked, and is refused before it runs unless it is exactly one
`SELECT` (which includes `WITH`, `VALUES`, `FROM ...`, `DESCRIBE`, `SHOW` and `SUMMARIZE`).
So writes, `ATTACH`, `COPY`, `EXPORT`, `INSTALL`/`LOAD`, `SET`/`RESET`, `PRAGMA`, `CALL`,
transactions and a second statement behind a `;` each get their own clear error, and a
`SELECT` that reaches for a file (`read_csv`, `glob`) is stopped by DuckDB itself. A timer
interrupts a query past its time limit; past the row limit, the rows are cut and the result
says so. Nothing here can change the file.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import time
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import duckdb
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from controlroom.domain.errors import BadInputError, StoreUnavailableError

DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_MAX_ROWS: Final = 10_000
MAX_TIMEOUT_S: Final = 300.0
MAX_ROWS: Final = 1_000_000

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
        description="the query is interrupted after this many seconds",
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
    truncated: bool = Field(description="true when the query had more rows than the limit")
    elapsed_ms: float
    note: str | None = Field(default=None, description="why the rows were cut, when they were")


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


def read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection that cannot change the file, read another file or reach the network."""
    return connect_waiting(path, read_only=True, config=_SAFE)


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


def run_checked(path: Path, sql: str, limits: QueryLimits) -> AnalyticsResult:
    con = read_only(path)
    try:
        check_sql(con, sql)
        return _run(con, sql, limits)
    finally:
        con.close()


def _run(con: duckdb.DuckDBPyConnection, sql: str, limits: QueryLimits) -> AnalyticsResult:
    timer = threading.Timer(limits.timeout_s, con.interrupt)
    timer.daemon = True
    started = time.perf_counter()
    timer.start()
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        types = [str(d[1]) for d in cursor.description or []]
        fetched = cursor.fetchmany(limits.max_rows + 1)
    except duckdb.InterruptException:
        raise AnalyticsQueryError(
            "query_timeout",
            f"the query ran past its time limit of {limits.timeout_s:g}s and was stopped "
            "(raise it with --timeout, or timeout_s over HTTP)",
        ) from None
    except duckdb.PermissionException as exc:
        raise AnalyticsQueryError(
            "refused_sql",
            f"analytics queries cannot read or write files: {_first_line(exc)}",
        ) from None
    except duckdb.Error as exc:
        raise AnalyticsQueryError("sql_error", _first_line(exc)) from None
    finally:
        timer.cancel()
    truncated = len(fetched) > limits.max_rows
    rows = [[_jsonable(v) for v in row] for row in fetched[: limits.max_rows]]
    return AnalyticsResult(
        columns=columns,
        types=types,
        rows=rows,
        row_count=len(rows),
        truncated=truncated,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        note=(
            f"only the first {limits.max_rows} rows are shown (the row limit; raise it with "
            "--max-rows, or max_rows over HTTP)"
            if truncated
            else None
        ),
    )


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
