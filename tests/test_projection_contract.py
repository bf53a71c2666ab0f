"""The projections contract, run over every event store backend this release ships."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import PersistenceError

from controlroom.domain.issue import Issue
from controlroom.engine.context import Context
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from controlroom.projections.db import PostgresDb
from controlroom.projections.views import Views
from tests.postgres import postgres_store_spec
from tests.projection_contract import AT, ProjectionsContract

__all__ = ["postgres_store_spec"]  # a fixture, used by name


class TestProjectionsOverAnInMemoryStore(ProjectionsContract):
    store_spec = "memory"
    durable = False


class TestProjectionsOverSQLite(ProjectionsContract):
    store_spec = "sqlite:events.sqlite"


class TestProjectionsOverPostgreSQL(ProjectionsContract):
    """The views in the log's own database and schema (a fresh schema per test)."""

    store_spec = "postgresql"  # the real DSN, with a schema per test, comes from the fixture

    @pytest.fixture(autouse=True)
    def _schema(self, postgres_store_spec: str) -> None:
        self.dsn = postgres_store_spec

    def open_store(self, workspace: Path) -> EventStore:
        return EventStore(env=store_env(workspace, self.dsn))

    def test_views_ahead_of_their_log_start_again_from_it(
        self, ctx: Context, tmp_path: Path
    ) -> None:
        # The views share the log's schema, so "another, shorter log" is this one emptied.
        self.record(ctx, "prose review", "prose review")
        with Views.for_store(ctx.store) as views:
            views.catch_up()
            assert views.status()[0].position > 0
            _sql(ctx.store, f'DELETE FROM "{_events_table(ctx.store)}"')
            assert views.catch_up() == 0
            assert views.query.runs() == []
            assert [s.position for s in views.status()] == [0] * len(views.names())

    def test_the_views_live_in_the_logs_schema_and_leave_no_local_file(
        self, ctx: Context, views: Views
    ) -> None:
        self.record(ctx, "prose review")
        views.catch_up()
        tables = {
            row[0]
            for row in _sql(
                ctx.store,
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                ctx.store.env["POSTGRES_SCHEMA"],
            )
        }
        assert {"projection_tracking", "runs", "artifacts", "issues"} <= tables
        assert not list(ctx.workspace.root.rglob("views*.sqlite"))

    def test_several_connections_catching_up_at_once_apply_each_event_once(
        self, ctx: Context
    ) -> None:
        self.record(ctx, "Draft scene 4", "consistency check", "prose review")
        readers = [Views.for_store(ctx.store) for _ in range(4)]  # a session each, as processes
        applied: list[int] = []
        threads = [
            threading.Thread(target=lambda v=v: applied.append(v.catch_up(batch_size=5)))
            for v in readers
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            live = readers[0].dump()
            assert sum(applied) == readers[1].rebuild()  # together, exactly one pass
            assert readers[2].dump() == live
        finally:
            for views in readers:
                views.close()

    def test_text_orders_byte_by_byte_as_in_sqlite(self, ctx: Context, views: Views) -> None:
        for issue_id in ("iss_b", "iss_B", "iss_a", "iss__"):
            ctx.store.save(
                Issue.open(
                    issue_id,
                    AT,
                    kind="k",
                    title="t",
                    detail="d",
                    run_id=None,
                    session_id=None,
                    recipe_id=None,
                )
            )
        views.catch_up()
        assert [i.issue_id for i in views.query.issues()] == ["iss_B", "iss__", "iss_a", "iss_b"]

    def test_a_lost_connection_fails_as_a_store_error_and_the_next_call_reconnects(
        self, ctx: Context, views: Views
    ) -> None:
        (run_id,) = self.record(ctx, "prose review")
        views.catch_up()
        assert isinstance(views.conn, PostgresDb)
        _sql(ctx.store, f"SELECT pg_terminate_backend({views.conn.conn.info.backend_pid})")
        with pytest.raises(PersistenceError):
            views.query.runs()
        assert [r.run_id for r in views.query.runs()] == [run_id]
        assert views.catch_up() == 0


def _events_table(store: EventStore) -> str:
    return f"{store.name.lower()}_events"


def _sql(store: EventStore, statement: str, *params: str) -> list[tuple[Any, ...]]:
    import psycopg

    from controlroom.eventstore.postgres import conninfo

    with psycopg.connect(conninfo(store.env), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{store.env["POSTGRES_SCHEMA"]}"')
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []
