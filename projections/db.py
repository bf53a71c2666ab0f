"""Where the read models live: a SQLite database, or the PostgreSQL database of the log.

Projections and queries write SQLite's SQL (`?` placeholders, its type names) and `Db`
runs it on either. On PostgreSQL a statement gets `%s` placeholders; a table `BYTEA`,
`BIGINT` and `TEXT COLLATE "C"` (text compares and orders byte by byte, as in SQLite);
`upsert` is `INSERT ... ON CONFLICT (key) DO UPDATE` instead of `INSERT OR REPLACE`; and a
transaction holds an advisory lock per projection where SQLite's `BEGIN IMMEDIATE` locks
the whole file, so processes catching up one projection take turns.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psycopg


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Db(ABC):
    """One connection to the views' database, and how its SQL is spelled."""

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        """An insert of one row of `columns` that replaces the row with the same `key`."""

    @abstractmethod
    def create(self, statement: str) -> None:
        """Run a `CREATE ...` statement written in SQLite's type names."""

    @abstractmethod
    @contextmanager
    def transaction(self, locks: Sequence[str]) -> Iterator[None]:
        """A write transaction no other process runs at once for any of `locks`."""

    @abstractmethod
    def table_exists(self, table: str) -> bool: ...

    @abstractmethod
    def close(self) -> None: ...


class SQLiteDb(Db):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path | None) -> SQLiteDb:
        conn = sqlite3.connect(
            str(path) if path else ":memory:",
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
        )
        conn.execute("PRAGMA journal_mode=WAL")
        # Views are rebuildable and each commit carries its position: losing the last
        # commits to a power cut costs a re-read, never a wrong view.
        conn.execute("PRAGMA synchronous=NORMAL")
        return cls(conn)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        return f"INSERT OR REPLACE INTO {table} VALUES ({', '.join('?' * len(columns))})"

    def create(self, statement: str) -> None:
        self.conn.execute(statement)

    @contextmanager
    def transaction(self, locks: Sequence[str]) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")  # the whole file: every lock at once
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def table_exists(self, table: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None

    def close(self) -> None:
        self.conn.close()


_PG_TYPES = {"BLOB": "BYTEA", "INTEGER": "BIGINT", "TEXT": 'TEXT COLLATE "C"'}
_PG_TYPE_WORDS = re.compile(r"\b(BLOB|INTEGER|TEXT)\b")


class PostgresDb(Db):
    """The views in the log's own PostgreSQL database and schema (one connection, in
    autocommit outside `transaction`, so a read never holds a transaction open)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.schema = env.get("POSTGRES_SCHEMA") or "public"
        self.conn = self._connect()
        self._in_transaction = False

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        from controlroom.eventstore.postgres import conninfo

        with _driver_errors():
            conn = psycopg.connect(conninfo(self.env), autocommit=True)
            conn.execute(f'SET search_path TO "{self.schema}"')  # a plain name, checked
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        """The connection; a new one when the last was lost (the server restarted), but
        never inside a transaction: its statements must fail with it, not run elsewhere."""
        if self.conn.broken and not self._in_transaction:
            self.conn = self._connect()
        return self.conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        with _driver_errors():
            return self._live().execute(_pg(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with _driver_errors(), self._live().cursor() as cursor:
            cursor.executemany(_pg(sql), rows)

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in key)
        action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"  # a link table
        return (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            f" ON CONFLICT ({', '.join(key)}) {action}"
        )

    def create(self, statement: str) -> None:
        self.execute(_PG_TYPE_WORDS.sub(lambda m: _PG_TYPES[m[1]], statement))

    @contextmanager
    def transaction(self, locks: Sequence[str]) -> Iterator[None]:
        """Readers on other connections wait for it to commit (a rebuild drops and recreates
        the tables), then see the new rows: none sees a half-written view."""
        with _driver_errors(), self._live().transaction():
            self._in_transaction = True
            try:
                # Advisory locks are per database: the schema is part of each key. Taken in
                # one order, so two transactions wanting several cannot deadlock.
                for name in sorted(set(locks)):
                    self.execute("SELECT pg_advisory_xact_lock(?)", (self._lock_key(name),))
                yield
            finally:
                self._in_transaction = False

    def _lock_key(self, name: str) -> int:
        digest = hashlib.sha256(f"controlroom.views:{self.schema}:{name}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def table_exists(self, table: str) -> bool:
        (found,) = self.execute("SELECT to_regclass(?) IS NOT NULL", (table,)).fetchone()
        return bool(found)

    def close(self) -> None:
        self.conn.close()


_DBAPI_ERRORS = frozenset(
    {
        "DataError",
        "DatabaseError",
        "IntegrityError",
        "InterfaceError",
        "InternalError",
        "NotSupportedError",
        "OperationalError",
        "ProgrammingError",
    }
)


@contextmanager
def _driver_errors() -> Iterator[None]:
    """psycopg's errors as the `eventsourcing` library's, the ones the store itself raises
    (and the CLI and HTTP report as store faults)."""
    import psycopg
    from eventsourcing import persistence

    try:
        yield
    except psycopg.Error as exc:
        # DB-API names both: the nearest of the library's to the driver's error class.
        names = [cls.__name__ for cls in type(exc).__mro__]
        kind = next(
            (getattr(persistence, name) for name in names if name in _DBAPI_ERRORS),
            persistence.PersistenceError,
        )
        raise kind(" ".join(str(exc).split())) from exc


def _pg(sql: str) -> str:
    """SQLite's `?` placeholders as psycopg's `%s` (a literal `%` doubled). The SQL is this
    package's own text, with values always bound, never formatted in."""
    return sql.replace("%", "%%").replace("?", "%s")
