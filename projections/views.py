"""The read models of one store: every named projection, in `views.sqlite` beside the log.

`Views` is what the CLI and the server hold: `catch_up()` (called by the catch-up loop and
before reads), `status()`, `rebuild(name)`, and `query`, the typed read side. The views of
an in-memory store live in memory too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlroom.eventstore.store import EventStore
from controlroom.projections import runs
from controlroom.projections.base import Projection, Projections
from controlroom.projections.issues import IssuesProjection
from controlroom.projections.queries import Queries
from controlroom.projections.run_view import RunView
from controlroom.projections.runs import RunsProjection


def all_projections() -> list[Projection]:
    """Every read model this release keeps, in the order they catch up."""
    return [RunsProjection(), IssuesProjection()]


class Views(Projections):
    def __init__(self, store: EventStore, path: Path | None) -> None:
        super().__init__(store, path, all_projections())
        self.query = Queries(self.conn, self.lock)

    @classmethod
    def for_store(cls, store: EventStore) -> Views:
        dbname = store.env.get("SQLITE_DBNAME")
        path = Path(dbname).with_name("views.sqlite") if dbname else None
        return cls(store, path)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every view, ordered: for comparing a rebuild with the live views."""
        with self.lock:
            return {
                table: sorted(self.conn.execute(f'SELECT * FROM "{table}"').fetchall())
                for projection in all_projections()
                for table in projection.tables
            }

    # -- kept for callers outside projections/ that have not moved to `query` yet ------------

    def run(self, run_id: str) -> RunView | None:
        """The run's fold as last written (no artifact texts). Prefer `query.run`."""
        with self.lock:
            return runs.load_view(self.conn, run_id)

    def runs(self, status: str | None = None, recipe_id: str | None = None) -> list[dict[str, Any]]:
        """Run summaries as JSON data. Prefer `query.runs`."""
        return [r.model_dump(mode="json") for r in self.query.runs(status, recipe_id)]

    def issues(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Issues as JSON data. Prefer `query.issues`."""
        return [i.model_dump(mode="json") for i in self.query.issues(run_id)]
