"""The projections contract, run over every event store backend this release ships."""

from __future__ import annotations

from tests.projection_contract import ProjectionsContract


class TestProjectionsOverAnInMemoryStore(ProjectionsContract):
    store_spec = "memory"
    durable = False


class TestProjectionsOverSQLite(ProjectionsContract):
    store_spec = "sqlite:events.sqlite"
