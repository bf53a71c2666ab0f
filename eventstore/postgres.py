"""`CONTROLROOM_STORE=postgresql://user:password@host:port/dbname?pool_size=10&schema=cr`.

The `eventsourcing` library's PostgreSQL persistence (psycopg 3 with a connection pool)
holds the log, the policies' tracking and, alongside, the projections. The DSN is parsed
here into the library's settings; its password never appears in a message.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, unquote, urlsplit

from controlroom.domain.errors import StoreConfigError
from controlroom.eventstore.backend import backend_of

#: Query parameters a DSN may carry, and the library settings they become.
_QUERY_SETTINGS = {
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "schema": "POSTGRES_SCHEMA",
}
DEFAULT_POOL_SIZE = "10"
logger = logging.getLogger(__name__)
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def redacted(dsn: str) -> str:
    """The DSN as it may be shown: no password."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def postgres_env(dsn: str) -> dict[str, str]:
    try:
        parts = urlsplit(dsn)
        port = parts.port or 5432
    except ValueError as exc:
        raise StoreConfigError(
            f"the PostgreSQL DSN '{redacted(dsn)}' is malformed: {exc}"
        ) from None
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname:
        raise StoreConfigError(
            f"the PostgreSQL DSN '{redacted(dsn)}' names no database "
            "(postgresql://user@host:5432/dbname)"
        )
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        # Large commits outside psycopg's pipeline mode (`pg_recorder`).
        "PROCESS_RECORDER_TOPIC": "controlroom.eventstore.pg_recorder:LargeCommitSafeRecorder",
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(port),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_POOL_SIZE": DEFAULT_POOL_SIZE,
        "POSTGRES_CONNECT_TIMEOUT": "5",
    }
    for key, values in parse_qs(parts.query, keep_blank_values=True).items():
        if key not in _QUERY_SETTINGS:
            raise StoreConfigError(
                f"the PostgreSQL DSN has an unknown parameter '{key}' "
                f"(known: {', '.join(sorted(_QUERY_SETTINGS))})"
            )
        value = values[-1]
        if key == "schema":
            if not _SCHEMA_NAME.match(value):
                raise StoreConfigError(f"schema='{value}' is not a plain lower-case SQL name")
        elif not value.isdigit():
            raise StoreConfigError(f"{key}='{value}' in the PostgreSQL DSN is not a number")
        env[_QUERY_SETTINGS[key]] = value
    return env


@contextmanager
def prepared_schema(env: dict[str, str]) -> Iterator[None]:
    """Hold a lock while the DSN's schema is created when it names one (the library creates
    tables, not schemas) and while the caller creates its tables on first use.

    PostgreSQL's `CREATE TABLE IF NOT EXISTS` and `CREATE INDEX IF NOT EXISTS` are not safe
    against each other: two processes opening a new store at the same instant (a worker and
    a CLI command) can fail with "tuple concurrently updated" or a duplicate `pg_type` key.
    A session advisory lock, keyed by database and schema, lets one set up at a time; once
    the tables exist the others find them and go on.
    """
    if backend_of(env) != "postgres":
        yield  # SQLite and memory stores need no such lock (see `EventStore._open`)
        return
    import psycopg

    schema = env.get("POSTGRES_SCHEMA") or "public"
    name = f"controlroom.store:{env['POSTGRES_DBNAME']}:{schema}"
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
    with psycopg.connect(conninfo(env), autocommit=True) as conn:
        # The lock comes first: `CREATE SCHEMA IF NOT EXISTS` races like the tables do
        # (a duplicate `pg_namespace` key, "schema ... already exists").
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            if env.get("POSTGRES_SCHEMA"):
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def conninfo(env: dict[str, str]) -> str:
    """A libpq connection string from the library's settings (quoted for libpq)."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        dbname=env["POSTGRES_DBNAME"],
        host=env["POSTGRES_HOST"],
        port=env["POSTGRES_PORT"],
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"],
        connect_timeout=env.get("POSTGRES_CONNECT_TIMEOUT", "5"),
    )


def prefer_lz4(recorder: object) -> None:
    """Have the server compress the log's large states with lz4 rather than pglz.

    A step commits 4-10 kB (a model request, a receipt's output), and PostgreSQL compresses
    every state over about 2 kB as it stores it: with its default, pglz, a commit of five
    8 kB states took 3.5 ms on this machine, with lz4 2.5 ms, and one 40 kB state 3.7 ms
    against 2.4 ms; reading a 300k-event log back was 14-16% faster. Only the column's
    setting changes (stored rows keep their compression; both read back). Never in the way
    of opening the store: a server older than PostgreSQL 14 or built without lz4, or a role
    that does not own the table, keeps pglz (and says so in the log).
    """
    if not any(c.__module__ == "eventsourcing.postgres" for c in type(recorder).__mro__):
        return  # not PostgreSQL: nothing to import (psycopg is the `postgres` extra)
    from eventsourcing.persistence import InterfaceError, OperationalError, PersistenceError
    from eventsourcing.postgres import PostgresApplicationRecorder
    from psycopg.sql import SQL, Identifier

    if not isinstance(recorder, PostgresApplicationRecorder):
        return
    schema, table = recorder.datastore.schema or "public", recorder.events_table_name
    try:
        with recorder.datastore.get_connection() as conn, conn.transaction():
            if conn.info.server_version < 140000:  # no column compression setting before 14
                return
            row = conn.execute(
                "SELECT a.attcompression FROM pg_attribute a"
                " JOIN pg_class c ON c.oid = a.attrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname = %s AND a.attname = 'state'",
                (schema, table),
            ).fetchone()
            if row is None or _compression(row) == "l":
                return
            conn.execute(
                SQL("ALTER TABLE {}.{} ALTER COLUMN state SET COMPRESSION lz4").format(
                    Identifier(schema), Identifier(table)
                )
            )
    except (OperationalError, InterfaceError):
        raise  # the server went away: as any other failure to open
    except PersistenceError as exc:  # the library's wrapping of the server's refusal
        logger.info("the PostgreSQL log stays compressed with pglz: %s", exc)


def _compression(row: object) -> str:
    # The library's connections return rows as dicts; plain ones as tuples.
    value = row["attcompression"] if isinstance(row, dict) else row[0]  # type: ignore[index]
    return str(value or "")
