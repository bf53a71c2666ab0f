"""Which kind of store a configuration names, decided once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

#: The kinds of store, as the rest of the code asks about them (never by sniffing keys).
Backend = Literal["sqlite", "postgres", "memory"]


def backend_of(env: Mapping[str, str]) -> Backend:
    """Which kind of store an eventsourcing environment configures."""
    module = env.get("PERSISTENCE_MODULE", "")
    if module == "eventsourcing.sqlite":
        return "sqlite"
    if module == "eventsourcing.postgres":
        return "postgres"
    return "memory"


def location_of(env: Mapping[str, str]) -> str:
    """Where an eventsourcing environment's log lives, for people: a file, a database (no
    password), or memory."""
    backend = backend_of(env)
    if backend == "sqlite":
        return str(env["SQLITE_DBNAME"])
    if backend == "postgres":
        # The schema too: two stores in one database are two logs (the analytics file
        # keeps this as its source, and rebuilds when it changes).
        schema = env.get("POSTGRES_SCHEMA")
        return (
            f"postgresql://{env.get('POSTGRES_USER')}@{env.get('POSTGRES_HOST')}:"
            f"{env.get('POSTGRES_PORT')}/{env.get('POSTGRES_DBNAME')}"
            + (f"?schema={schema}" if schema else "")
        )
    return "process memory (CONTROLROOM_STORE=memory: gone when the process exits)"
