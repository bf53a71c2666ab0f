"""What kind of store fault an exception is: told apart once, where the driver raises it.

The drivers report faults from deep inside a transaction: sqlite3 (with its result code,
`SQLITE_FULL`, `SQLITE_BUSY` …), psycopg (with its SQLSTATE, or a connection error class),
the event store library (wrapping either), or the operating system (with its errno). The
store raises `StoreUnavailableError` carrying the kind found here, so nobody downstream
reads the message text to learn what happened.
"""

from __future__ import annotations

import errno
import sqlite3

from controlroom.domain.errors import StoreFaultKind

_SQLITE: dict[str, StoreFaultKind] = {
    "SQLITE_FULL": "disk_full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_IOERR": "io_error",
    "SQLITE_CANTOPEN": "unavailable",
    "SQLITE_CORRUPT": "io_error",
    "SQLITE_NOTADB": "io_error",
}
#: PostgreSQL SQLSTATEs: disk full, out of memory, read-only transaction, lock timeouts.
_SQLSTATE: dict[str, StoreFaultKind] = {
    "53100": "disk_full",
    "25006": "read_only",
    "55P03": "locked",
    "57014": "locked",  # statement timeout (waiting on a lock)
}
_CONNECTION_CLASSES = {"OperationalError", "PoolTimeout", "TooManyRequests", "InterfaceError"}


def chain_of(exc: BaseException) -> list[BaseException]:
    """The exception and everything it was raised from, without loops."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def fault_kind(exc: BaseException) -> StoreFaultKind | None:
    """The kind of store fault `exc` is, None when it is no store fault (an OSError of a
    tool or a model call is not the store's)."""
    chain = chain_of(exc)
    for error in chain:
        if isinstance(error, sqlite3.Error):
            name = getattr(error, "sqlite_errorname", "") or ""
            base = name.split("_", 2)
            found = _SQLITE.get(name) or _SQLITE.get("_".join(base[:2]))
            if found is not None:
                return found
        state = getattr(error, "sqlstate", None)
        if isinstance(state, str) and type(error).__module__.startswith("psycopg"):
            if state in _SQLSTATE:
                return _SQLSTATE[state]
            if state.startswith("08"):  # connection exception
                return "unavailable"
    codes = {e.errno for e in chain if isinstance(e, OSError)}
    if errno.ENOSPC in codes:
        return "disk_full"
    if errno.EROFS in codes:
        return "read_only"
    driver = [e for e in chain if _is_driver_error(e)]
    if not driver:
        return None
    postgres = [e for e in driver if type(e).__module__.startswith(("psycopg", "psycopg_pool"))]
    if any(_CONNECTION_CLASSES & {c.__name__ for c in type(e).__mro__} for e in postgres):
        return "unavailable"
    if errno.EIO in codes:
        return "io_error"
    return "io_error"


def _is_driver_error(exc: BaseException) -> bool:
    from eventsourcing.persistence import PersistenceError

    return isinstance(exc, sqlite3.Error | PersistenceError) or type(exc).__module__.startswith(
        ("psycopg", "psycopg_pool")
    )
