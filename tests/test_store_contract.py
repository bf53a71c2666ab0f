"""The event store contract, run against every backend this release ships."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.issue import IssueOpened
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from tests.postgres import postgres_store_spec
from tests.store_contract import EventStoreContract, opened

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

    def test_the_log_stores_large_states_with_lz4_and_reads_older_pglz_ones(
        self, workspace: Path
    ) -> None:
        """A log made before the column was set (pglz) is switched on open; its rows read
        back, and new ones are compressed with lz4."""
        import psycopg

        from controlroom.eventstore.postgres import conninfo, postgres_env

        chapter = "It was a dark and stormy night; the rain fell in torrents. " * 200
        store = self.open_store(workspace)
        table = store.recorder.events_table_name  # type: ignore[attr-defined]
        schema = postgres_env(self.dsn)["POSTGRES_SCHEMA"]
        where = f'"{schema}"."{table}"'
        with psycopg.connect(conninfo(postgres_env(self.dsn)), autocommit=True) as conn:
            conn.execute(f"ALTER TABLE {where} ALTER COLUMN state SET COMPRESSION pglz")
            store.save(opened("iss_old", detail=chapter))
            store.close()
            store = self.open_store(workspace)
            store.save(opened("iss_new", detail=chapter))
            methods = conn.execute(
                f"SELECT originator_id, pg_column_compression(state) FROM {where}"
            ).fetchall()
        assert sorted(methods) == [("iss_new", "lz4"), ("iss_old", "pglz")]
        for issue_id in ("iss_old", "iss_new"):
            (event,) = store.stream(issue_id)
            assert isinstance(event, IssueOpened) and event.detail == chapter
        store.close()

    def test_a_log_made_before_the_index_on_event_types_gets_it_when_opened(
        self, workspace: Path
    ) -> None:
        import psycopg

        from controlroom.eventstore.postgres import conninfo, postgres_env

        env = postgres_env(self.dsn)
        schema = env["POSTGRES_SCHEMA"]
        store = self.open_store(workspace)
        store.save(opened("iss_1"))
        table = store.recorder.events_table_name  # type: ignore[attr-defined]
        store.close()

        def indexes(conn: psycopg.Connection[Any]) -> list[str]:
            rows = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
                (schema, table),
            ).fetchall()
            return [str(row[0]) for row in rows]

        with psycopg.connect(conninfo(env), autocommit=True) as conn:
            assert any("(topic, notification_id)" in i for i in indexes(conn))
            conn.execute(f'DROP INDEX "{schema}"."{table}_by_topic"')
            assert not any("(topic, notification_id)" in i for i in indexes(conn))
            store = self.open_store(workspace)
            try:
                assert any("(topic, notification_id)" in i for i in indexes(conn))
                found = store.recorder.select_notifications(0, 5, topics=[IssueOpened.topic()])
                assert [n.id for n in found] == [1]
            finally:
                store.close()
