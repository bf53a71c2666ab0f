"""Store faults in words: disk full, read-only, locked, unreachable.

The drivers report these as exceptions from deep inside a transaction (sqlite3's, the
event store library's, psycopg's, or the operating system's). At the boundary each is
told apart here once, so the CLI prints what happened and what to do (exit
`EXIT_STORE_FAULT`) and the server answers 503 with `Retry-After`. A failed commit records
nothing, so nothing recorded is lost: once the cause is fixed, `controlroom resume` goes on.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from controlroom.domain.errors import StoreFaultKind, StoreUnavailableError
from controlroom.eventstore.faults import chain_of, fault_kind

#: `sysexits.h` EX_IOERR: the store could not be read or written.
EXIT_STORE_FAULT = 74
#: Seconds a client is told to wait before trying again.
RETRY_AFTER_S = 5


@dataclass(frozen=True)
class StoreFault:
    kind: StoreFaultKind
    message: str
    hint: str

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


_RESUME = "nothing recorded is lost: then `controlroom resume` continues interrupted runs"


#: What each kind of fault is, in words, and what to do about it.
_WORDS: dict[StoreFaultKind, tuple[str, str]] = {
    "disk_full": ("the store's disk is full", f"free some space; {_RESUME}"),
    "read_only": (
        "the store cannot be written (read-only file or file system, or no permission)",
        f"make it writable; {_RESUME}",
    ),
    "locked": (
        "the store is locked by another process for too long",
        f"try again shortly; {_RESUME}",
    ),
    "unavailable": ("the store's database cannot be reached", _RESUME),
    "io_error": (
        "the store's disk failed to read or write (full, removed or failing)",
        f"check the disk and its free space; {_RESUME}",
    ),
}


def store_fault(exc: BaseException) -> StoreFault | None:
    """What went wrong with the store, or None when `exc` is not a store fault. The store
    says which kind (`StoreUnavailableError.kind`); a driver's error that escaped some
    other way is classified by its codes (`eventstore/faults.py`), never by its text."""
    if isinstance(exc, StoreUnavailableError):  # already in words, with what to do
        return StoreFault(exc.kind, str(exc), "")
    kind = fault_kind(exc)
    if kind is None:
        return None  # an OSError of a tool or a model call is not the store's
    message, hint = _WORDS[kind]
    if kind == "io_error" and errno.EIO not in {
        e.errno for e in chain_of(exc) if isinstance(e, OSError)
    }:
        reason = " ".join(str(exc).split())[:200]
        message = f"the store failed: {reason}"
    return StoreFault(kind, message, hint)
