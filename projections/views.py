"""The read models of one store: every named projection, in `views.sqlite` beside the log.

`Views` is what the CLI and the server hold: `catch_up()` (called by the catch-up loop and
before reads), `status()`, `rebuild(name)`, and `query`, the typed read side. The views of
an in-memory store live in memory too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlroom.domain.canonical import sha256_text
from controlroom.eventstore.store import EventStore
from controlroom.projections.base import Projection, Projections
from controlroom.projections.issues import IssuesProjection
from controlroom.projections.queries import Queries
from controlroom.projections.runs import RunsProjection


def all_projections() -> list[Projection]:
    """Every read model this release keeps, in the order they catch up."""
    return [RunsProjection(), IssuesProjection()]


class Views(Projections):
    def __init__(self, store: EventStore, path: Path | None) -> None:
        super().__init__(store, path, all_projections())
        self.query = Queries(self.conn, self.lock)

    @classmethod
    def for_store(cls, store: EventStore, workspace: Path | None = None) -> Views:
        """Beside a SQLite log: `views.sqlite`. For a PostgreSQL log, given the workspace: a
        local views file named after that database, so each machine keeps its read models
        caught up from the shared log (and two databases never share a file). Otherwise,
        in memory."""
        dbname = store.env.get("SQLITE_DBNAME")
        if dbname:
            return cls(store, Path(dbname).with_name("views.sqlite"))
        if workspace is not None and "POSTGRES_DBNAME" in store.env:
            identity = "|".join(
                store.env.get(key, "")
                for key in ("POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DBNAME", "POSTGRES_SCHEMA")
            )
            folder = workspace / ".control-room"
            folder.mkdir(parents=True, exist_ok=True)
            return cls(store, folder / f"views-pg-{sha256_text(identity)[:12]}.sqlite")
        return cls(store, None)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every view, ordered: for comparing a rebuild with the live views."""
        with self.lock:
            return {
                table: sorted(self.conn.execute(f'SELECT * FROM "{table}"').fetchall())
                for name in self.names()
                for table in self.get(name).tables
            }
