"""The event store contract, run against every backend this release ships."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from tests.postgres import postgres_store_spec
from tests.store_contract import EventStoreContract

__all__ = ["postgres_store_spec"]  # a fixture, used by name


class TestInMemoryEventStore(EventStoreContract):
    store_spec = "memory"
    durable = False


class TestSQLiteEventStore(EventStoreContract):
    store_spec = "sqlite:events.sqlite"


class TestPostgreSQLEventStore(EventStoreContract):
    store_spec = "postgresql"  # the real DSN, with a schema per test, comes from the fixture

    @pytest.fixture(autouse=True)
    def _schema(self, postgres_store_spec: str) -> None:
        self.dsn = postgres_store_spec

    def open_store(self, workspace: Path) -> EventStore:
        return EventStore(env=store_env(workspace, self.dsn))
