"""The event store contract, run against every backend this release ships."""

from __future__ import annotations

from tests.store_contract import EventStoreContract


class TestInMemoryEventStore(EventStoreContract):
    store_spec = "memory"
    durable = False


class TestSQLiteEventStore(EventStoreContract):
    store_spec = "sqlite:events.sqlite"
