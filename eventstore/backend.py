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
