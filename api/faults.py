"""Store faults in words: disk full, read-only, locked, unreachable.

The drivers report these as exceptions from deep inside a transaction (sqlite3's, the
event store library's, psycopg's, or the operating system's). At the boundary each is
told apart here once, so the CLI prints what happened and what to do (exit
`EXIT_STORE_FAULT`) and the server answers 503 with `Retry-After`. A failed commit records
nothing, so nothing recorded is lost: once the cause is fixed, `controlroom resume` goes on.
"""

from __future__ import annotations

import errno
import sqlite3
from dataclasses import dataclass

from eventsourcing.persistence import PersistenceError

from controlroom.domain.errors import StoreUnavailableError

#: `sysexits.h` EX_IOERR: the store could not be read or written.
EXIT_STORE_FAULT = 74
#: Seconds a client is told to wait before trying again.
RETRY_AFTER_S = 5


@dataclass(frozen=True)
class StoreFault:
    kind: str  # disk_full | read_only | locked | unavailable | io_error
    message: str
    hint: str

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


_RESUME = "nothing recorded is lost: then `controlroom resume` continues interrupted runs"


def store_fault(exc: BaseException) -> StoreFault | None:
    """What went wrong with the store, or None when `exc` is not a store fault."""
    if isinstance(exc, StoreUnavailableError):  # already in words, with what to do
        text = str(exc).lower()
        kind = "disk_full" if "full" in text else "locked" if "locked" in text else "unavailable"
        return StoreFault(kind, str(exc), "")
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    driver = any(
        isinstance(e, sqlite3.Error | PersistenceError) or type(e).__module__.startswith("psycopg")
        for e in chain
    )
    codes = {e.errno for e in chain if isinstance(e, OSError)}
    if not driver and not codes & {errno.ENOSPC, errno.EROFS}:
        return None  # an OSError of a tool or a model call is not the store's
    text = " ".join(str(e) for e in chain).lower()
    if errno.ENOSPC in codes or "disk is full" in text or "no space" in text:
        return StoreFault("disk_full", "the store's disk is full", f"free some space; {_RESUME}")
    if errno.EROFS in codes or "readonly" in text or "read-only" in text:
        return StoreFault(
            "read_only",
            "the store cannot be written (read-only file or file system, or no permission)",
            f"make it writable; {_RESUME}",
        )
    if "locked" in text or "busy" in text:
        return StoreFault(
            "locked",
            "the store is locked by another process for too long",
            f"try again shortly; {_RESUME}",
        )
    postgres = [e for e in chain if type(e).__module__.startswith(("psycopg", "psycopg_pool"))]
    if any(_is_connection_failure(e) for e in postgres):
        return StoreFault("unavailable", "the store's database cannot be reached", _RESUME)
    if "disk i/o error" in text or errno.EIO in codes:
        return StoreFault(
            "io_error",
            "the store's disk failed to read or write (full, removed or failing)",
            f"check the disk and its free space; {_RESUME}",
        )
    reason = " ".join(str(exc).split())[:200]
    return StoreFault("io_error", f"the store failed: {reason}", _RESUME)


def _is_connection_failure(exc: BaseException) -> bool:
    """psycopg's OperationalError (and the pool's timeouts) mean the server could not be
    reached or went away; any other error of the driver (a constraint, a race between
    statements) is the store failing, said in its own words, not an outage."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"OperationalError", "PoolTimeout", "TooManyRequests"})
