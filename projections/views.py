"""The read models of one store: every named projection, in `views.sqlite` beside a SQLite
log, or in the tables of a PostgreSQL log's own database and schema.

`Views` is what the CLI and the server hold: `catch_up()` (called by the catch-up loop and
before reads), `status()`, `rebuild(name)`, and `query`, the typed read side. The views of
an in-memory store live in memory too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlroom.eventstore.store import EventStore
from controlroom.projections.base import Projection, Projections
from controlroom.projections.db import Db, PostgresDb
from controlroom.projections.issues import IssuesProjection
from controlroom.projections.plan_queries import ConferenceQueries, PlanQueries
from controlroom.projections.queries import Queries
from controlroom.projections.runs import RunsProjection
from controlroom.projections.status_queries import StatusQueries


def all_projections() -> list[Projection]:
    """Every read model this release keeps, in the order they catch up."""
    from controlroom.projections.conferences import ConferencesProjection
    from controlroom.projections.plans import PlansProjection
    from controlroom.projections.status import StatusProjection

    return [
        RunsProjection(),
        IssuesProjection(),
        PlansProjection(),
        ConferencesProjection(),
        StatusProjection(),
    ]


class Views(Projections):
    def __init__(self, store: EventStore, where: Path | Db | None) -> None:
        super().__init__(store, where, all_projections())
        self.query = Queries(self.conn, self.lock)
        self.plans = PlanQueries(self.conn, self.lock)
        self.conferences = ConferenceQueries(self.conn, self.lock)
        self.pipelines = StatusQueries(self.conn, self.lock)
        #: The workspace these views are of, when known: followers that write into it (the
        #: STATUS.md export) need it.
        self.workspace: Path | None = None

    @classmethod
    def for_store(cls, store: EventStore, workspace: Path | None = None) -> Views:
        """Beside a SQLite log: `views.sqlite`. With a PostgreSQL log: in its database and
        schema, shared by every process and machine that uses the log. Otherwise, in memory.
        `workspace`: where followers of these views write (the STATUS.md export); without
        it they write nothing."""
        dbname = store.env.get("SQLITE_DBNAME") if store.backend == "sqlite" else None
        if dbname:
            views = cls(store, Path(dbname).with_name("views.sqlite"))
        elif store.backend == "postgres":
            views = cls(store, PostgresDb(store.env))
        else:
            views = cls(store, None)
        views.workspace = workspace
        return views

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every view, ordered: for comparing a rebuild with the live views."""
        with self.lock:
            return {
                table: sorted(self.conn.execute(f'SELECT * FROM "{table}"').fetchall())
                for name in self.names()
                for table in self.get(name).tables
            }
