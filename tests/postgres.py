"""PostgreSQL for tests: the machine's server (127.0.0.1:5432, database `test`, trust auth),
one fresh schema per test, dropped afterwards. Tests that need it fail in CI when the
server cannot be reached, and skip elsewhere."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from functools import cache

import pytest

BASE_DSN_VAR = "CONTROLROOM_TEST_POSTGRES"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def base_dsn() -> str:
    return os.environ.get(BASE_DSN_VAR, DEFAULT_DSN)


@cache
def _unreachable_reason() -> str | None:
    try:
        import psycopg

        with psycopg.connect(_conninfo(base_dsn()), connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at {base_dsn()} is unreachable: {exc}"


def _conninfo(dsn: str) -> str:
    from controlroom.eventstore.postgres import conninfo, postgres_env

    return conninfo(postgres_env(dsn))


def require_postgres() -> None:
    reason = _unreachable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI must run the PostgreSQL tests; start the server)")
    pytest.skip(reason)


@pytest.fixture
def postgres_store_spec() -> Iterator[str]:
    """A `CONTROLROOM_STORE` value naming a schema of its own, dropped afterwards."""
    require_postgres()
    import psycopg

    schema = f"cr_test_{secrets.token_hex(6)}"
    yield f"{base_dsn()}?schema={schema}&pool_size=4"
    with psycopg.connect(_conninfo(base_dsn()), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
