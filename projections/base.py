"""Named projections: read models built from the event log, each with its own tracking row.

A projection has a `name`, the stored names of the event types it reads (`topics`), its
tables, and `apply`, which writes what one batch of events changes. `Projections` runs a
set of them over one database (SQLite, or the log's own PostgreSQL database: see `db.py`):
for each, it reads the log after that projection's tracked position and commits the changed
rows together with the new position. So every event is applied exactly once, a catch-up
resumes where the last one stopped, and `rebuild` replays the log from zero, one projection
or all.

Several threads (one connection behind a lock) and several processes (`BEGIN IMMEDIATE` on
SQLite, an advisory lock per projection on PostgreSQL, the position re-read inside the
transaction) may catch up at once: they take turns.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import orjson
from eventsourcing.persistence import Notification

from controlroom.domain.errors import BadInputError
from controlroom.domain.events import EVENT_TYPES, UnknownEventTypeError, parse_topic
from controlroom.eventstore.store import EventStore
from controlroom.projections.db import Db, SQLiteDb
from controlroom.projections.models import ProjectionStatus

log = logging.getLogger("controlroom.projections")

#: `PRAGMA user_version` of a SQLite file's layout. A file of another layout (release 0.1 kept
#: one tracking row for all its views) holds nothing that cannot be rebuilt: it is dropped.
#: (PostgreSQL views have only ever had this layout, and share their schema with the log.)
LAYOUT = 2
TRACKING = """CREATE TABLE IF NOT EXISTS projection_tracking (
    name TEXT PRIMARY KEY, position INTEGER NOT NULL, version INTEGER NOT NULL)"""
BATCH = 1000
REBUILD_BATCH = 5000
#: How far past its tracked position a projection may have read, finding none of its event
#: types, before the position is written (as engine/policies.py does for policies): a pass
#: over a log that moved by events of other types writes nothing, and a new process rereads
#: at most this many events (through the store's index on event types).
SKIP_AHEAD = 500


class Recorded:
    """One stored event as a projection reads it: position, stream, version, stored name.
    Its JSON is decoded (and upcast to the current shape) only when a handler calls
    `decode`, and not kept: decoding is most of the cost of reading, and a batch of decoded
    events held at once costs far more than the same events decoded one after the other."""

    __slots__ = ("_shape", "_state", "_topic", "originator_id", "position", "type_name", "version")

    def __init__(self, note: Notification) -> None:
        self.position: int = note.id
        self.originator_id = str(note.originator_id)
        self.version: int = note.originator_version
        self.type_name, self._shape = parse_topic(note.topic)
        self._topic, self._state = note.topic, note.state

    def decode(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(self._state)
        if self._shape != _current_shape(self.type_name):
            data = EVENT_TYPES.upcast(self._topic, data)[1]
        return data


def _current_shape(name: str) -> int:
    """The class version this release reads an event type at; an unknown type is read as
    stored (1), which is all a projection that ignores it needs."""
    try:
        return EVENT_TYPES.get(name).class_version
    except UnknownEventTypeError:
        return 1


class Projection(ABC):
    """A read model: which events it reads, which tables it owns, how a batch changes them."""

    name: ClassVar[str]
    #: Stored names of the event types it reads; None reads every event.
    topics: ClassVar[frozenset[str] | None]
    #: Bump when the tables or the fold change: the projection is then rebuilt from zero.
    version: ClassVar[int] = 1
    tables: ClassVar[tuple[str, ...]]
    #: `CREATE ... IF NOT EXISTS` statements for `tables` and their indexes.
    schema: ClassVar[tuple[str, ...]]

    @abstractmethod
    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        """Write what the batch changes. The caller commits it with the new position."""


class Projections:
    """A set of projections over one database: a SQLite file at `where`, SQLite's
    `:memory:` when it is None, or a `Db` given (`PostgresDb`: the log's own database)."""

    def __init__(
        self, store: EventStore, where: Path | Db | None, projections: Sequence[Projection]
    ) -> None:
        self.store = store
        self.conn = where if isinstance(where, Db) else SQLiteDb.open(where)
        self.lock = threading.RLock()
        self._projections = {p.name: p for p in projections}
        self._topics = {
            p.name: tuple(EVENT_TYPES.topics_for(p.topics)) if p.topics is not None else ()
            for p in projections
        }
        #: What this process knows of the log beyond each tracked position: (position, end)
        #: when the events after `position` up to `end` hold none of the projection's types.
        #: An idle pass (the head is `end`) then opens no transaction at all.
        self._read: dict[str, tuple[int, int]] = {}
        with self.lock:
            if not self._is_prepared():
                # Every projection's lock, and the tracking table's own for a first creation.
                with self.conn.transaction(["projection_tracking", *self._projections]):
                    self._prepare()

    def names(self) -> list[str]:
        return list(self._projections)

    def catch_up(self, batch_size: int = BATCH) -> int:
        """Apply every event recorded since each projection's position; returns how many
        events were applied, all projections together. One projection failing does not
        hold the others back; the first failure is raised once they all had their turn."""
        applied = 0
        failure: Exception | None = None
        with self.lock:
            head = self.store.max_position()
            for projection in self._projections.values():
                if self._read.get(projection.name, (0, -1))[1] == head:
                    continue  # read up to the head already: nothing to do, nothing to lock
                try:
                    while True:
                        with self.conn.transaction([projection.name]):
                            count, done, read = self._advance(projection, batch_size)
                        self._read[projection.name] = read  # once committed
                        applied += count
                        if done:
                            break
                except sqlite3.OperationalError as exc:
                    # The database's own fault (disk full, locked): one line, no traceback,
                    # as it repeats on every pass until fixed; the next pass resumes.
                    log.warning("projection %s cannot catch up: %s", projection.name, exc)
                    failure = failure or exc
                except Exception as exc:
                    log.exception("projection %s failed to catch up", projection.name)
                    failure = failure or exc
        if failure is not None:
            raise failure
        return applied

    def rebuild(self, name: str | None = None) -> int:
        """Empty one projection (or every one) and replay the whole log into it, in one
        transaction each: readers see the old view until the new one is complete."""
        targets = [self.get(name)] if name is not None else list(self._projections.values())
        applied = 0
        with self.lock:
            for projection in targets:
                with self.conn.transaction([projection.name]):
                    self._reset(projection)
                    done = False
                    while not done:
                        count, done, read = self._advance(projection, REBUILD_BATCH)
                        applied += count
                self._read[projection.name] = read
        return applied

    def status(self) -> list[ProjectionStatus]:
        with self.lock:
            head = self.store.max_position()
            rows = dict(self.conn.execute("SELECT name, position FROM projection_tracking"))
            positions = {name: self._start(name, rows.get(name, 0)) for name in self._projections}
        return [
            ProjectionStatus(
                name=name, position=positions[name], head=head, lag=head - positions[name]
            )
            for name in self._projections
        ]

    def get(self, name: str) -> Projection:
        try:
            return self._projections[name]
        except KeyError:
            raise BadInputError(
                f"unknown projection '{name}'; known: {', '.join(self._projections)}"
            ) from None

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _is_prepared(self) -> bool:
        """Whether the file has this layout and every projection at its version: opening it
        then takes no write lock, so a long rebuild in another process does not hold it up."""
        if not self._layout_is_current() or not self.conn.table_exists("projection_tracking"):
            return False
        versions = dict(self.conn.execute("SELECT name, version FROM projection_tracking"))
        return all(versions.get(p.name) == p.version for p in self._projections.values())

    def _prepare(self) -> None:
        """Bring the file to this layout and every projection to its version (in the
        caller's transaction, re-checking what `_is_prepared` saw)."""
        if not self._layout_is_current():
            tables = self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            for (table,) in tables:
                self.conn.execute(f'DROP TABLE "{table}"')
            self.conn.execute(f"PRAGMA user_version = {LAYOUT}")
        self.conn.create(TRACKING)
        for projection in self._projections.values():
            row = self.conn.execute(
                "SELECT version FROM projection_tracking WHERE name = ?", (projection.name,)
            ).fetchone()
            if row is None or row[0] != projection.version:
                self._reset(projection)

    def _layout_is_current(self) -> bool:
        """A SQLite file's layout is its `user_version`; PostgreSQL has only this one."""
        if not isinstance(self.conn, SQLiteDb):
            return True
        (layout,) = self.conn.execute("PRAGMA user_version").fetchone()
        return bool(layout == LAYOUT)

    def _reset(self, projection: Projection) -> None:
        """Drop the projection's tables, create them anew, and track it from position 0."""
        self._read.pop(projection.name, None)
        for table in projection.tables:
            self.conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        for statement in projection.schema:
            self.conn.create(statement)
        self.conn.execute(
            self.conn.upsert("projection_tracking", ("name", "position", "version"), ("name",)),
            (projection.name, 0, projection.version),
        )

    def _start(self, name: str, position: int) -> int:
        """Where reading resumes after a tracked `position`: further when this process read
        past it and found none of the projection's types (what it read was after a position
        this one has reached, so a view reset since, below it, is read again in full)."""
        after, end = self._read.get(name, (0, -1))
        return max(position, end) if position >= after else position

    def _advance(
        self, projection: Projection, batch_size: int
    ) -> tuple[int, bool, tuple[int, int]]:
        """Apply the next batch after the tracked position, inside the caller's transaction;
        returns how many events were applied, whether the log's head was reached, and what
        the caller may remember once it committed: (the position written, how far it read)."""
        name = projection.name
        (position,) = self.conn.execute(
            "SELECT position FROM projection_tracking WHERE name = ?", (name,)
        ).fetchone()
        head = self.store.max_position()
        if position > head:
            # The log is shorter than what this view has seen: it was built from another
            # store (or the log's tail was removed). Start again from what is there.
            log.warning("projection %s is ahead of the log: rebuilding it", name)
            self._reset(projection)
            position = 0
        start = self._start(name, position)
        if start >= head:
            return 0, True, (position, head)
        notes = self.store.recorder.select_notifications(
            start=start,
            limit=batch_size,
            stop=head,
            topics=self._topics[name],
            inclusive_of_start=False,
        )
        if notes:
            projection.apply(self.conn, [Recorded(note) for note in notes])
        done = len(notes) < batch_size
        end = head if done else notes[-1].id
        if notes or end - position >= SKIP_AHEAD:
            # At the head, the position moves past events of other topics too, so the lag of
            # a projection that reads a few types is not the count of events it skipped. A
            # short stretch of none of its types is only remembered (no write).
            self.conn.execute(
                "UPDATE projection_tracking SET position = ? WHERE name = ?", (end, name)
            )
            position = end
        return len(notes), done, (position, end)
