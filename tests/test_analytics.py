"""The analytics contract, run over every event store backend this release ships."""

from __future__ import annotations

import pytest

from tests.analytics_contract import AnalyticsContract
from tests.postgres import postgres_store_spec as postgres_store_spec


class TestAnalyticsOverAnInMemoryStore(AnalyticsContract):
    store_spec = "memory"


class TestAnalyticsOverSQLite(AnalyticsContract):
    store_spec = "sqlite:events.sqlite"


class TestAnalyticsOverPostgreSQL(AnalyticsContract):
    store_spec = "postgresql"  # the real DSN, with a schema per test, comes from the fixture

    @pytest.fixture(autouse=True)
    def _schema(self, postgres_store_spec: str) -> None:
        self.store_spec = postgres_store_spec
