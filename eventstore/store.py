"""The event store application: one log holding every aggregate, and the one write path.

Every commit, of any aggregate, goes through `save`: it appends the pending events in one
transaction (optionally with a policy's tracking position, so a reaction and the position of
the event it reacted to are recorded together), then tells every observer what was committed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    Mapper,
    OperationalError,
    ProcessRecorder,
    StoredEvent,
    Tracking,
)

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.errors import PayloadTooLargeError, StoreUnavailableError
from controlroom.domain.events import DomainEvent
from controlroom.domain.texts import StoredText, TextStored, text_id
from controlroom.eventstore.backend import Backend, backend_of, location_of
from controlroom.eventstore.config import max_event_bytes, store_env
from controlroom.eventstore.faults import fault_kind
from controlroom.eventstore.group_commit import GroupCommitter
from controlroom.eventstore.mapper import PydanticMapper
from controlroom.eventstore.postgres import prefer_lz4, prepared_schema

A = TypeVar("A", bound=Aggregate)
logger = logging.getLogger(__name__)
#: Test-only fault injection: the process kills itself (SIGKILL) right after its Nth durable
#: commit, so tests can stop it between any two commits. Unset in normal use.
CRASH_AFTER_COMMIT_VAR = "CONTROLROOM_CRASH_AFTER_COMMIT"


#: How many texts read back (`EventStore.text`) a store keeps at most.
_READ_TEXTS_KEPT = 256


@dataclass(frozen=True)
class Positioned:
    """An event with its global position in the store (the SSE id, the replay cursor)."""

    position: int
    event: DomainEvent


@dataclass(frozen=True)
class Damaged:
    """A stored record this release cannot decode (hand-edited, or written by an older
    release without the edge limits). Readers report it with its place and go on."""

    position: int | None
    originator_id: str
    originator_version: int
    topic: str
    reason: str

    def __str__(self) -> str:
        where = f"position {self.position}, " if self.position is not None else ""
        return (
            f"{where}{self.originator_id} v{self.originator_version} ({self.topic}) "
            f"cannot be read: {self.reason}"
        )


class CommitObserver(Protocol):
    """Told about every durable commit, after it is durable. Keyword-only, so new facts can
    be passed later without breaking observers (extra ones arrive in `**future`)."""

    def __call__(
        self, *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
    ) -> None: ...


def _unreachable(env: dict[str, str], exc: BaseException) -> str:
    where = (
        f"{env.get('POSTGRES_USER')}@{env.get('POSTGRES_HOST')}:{env.get('POSTGRES_PORT')}"
        f"/{env.get('POSTGRES_DBNAME')}"
    )
    # The driver's message names host and cause; it never includes the password. Its lines
    # ("... Connection refused", "Is the server running ...?") become one.
    lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
    reason = "; ".join(lines) or type(exc).__name__
    stop = "" if reason.endswith((".", "?", "!")) else "."
    return (
        f"cannot use the PostgreSQL store {where}: {reason}{stop} Check that the server is "
        "running and that CONTROLROOM_STORE names the right user, password and database."
    )


class EventStore(Application[str]):
    name = "ControlRoom"

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        max_event_bytes: int | None = None,
        crash_after_commit: int | None = None,
    ) -> None:
        self._max_event_bytes = max_event_bytes
        #: Which kind of store this is, decided once from the configuration.
        self.backend: Backend = backend_of(env or {})
        try:
            with prepared_schema(env or {}):
                self._open(env)
                prefer_lz4(self.recorder)
        except (OperationalError, InterfaceError) as exc:
            raise StoreUnavailableError(
                _unreachable(env or {}, exc), fault_kind(exc) or "unavailable"
            ) from None
        except Exception as exc:
            if type(exc).__module__.startswith(("psycopg", "psycopg_pool")):
                raise StoreUnavailableError(
                    _unreachable(env or {}, exc), fault_kind(exc) or "unavailable"
                ) from None
            raise
        self._observers: list[CommitObserver] = []
        self._observers_lock = threading.Lock()
        self._committer: GroupCommitter | None = None
        self._crash_after = crash_after_commit
        self.commits = 0
        #: Records found undecodable so far, by (aggregate id, version).
        self.damaged: dict[tuple[str, int], Damaged] = {}
        #: Texts known to be stored (domain/texts.py), by sha256: looked up once each.
        self._stored_texts: set[str] = set()
        #: Texts read back for events' detached fields, by sha256 (they never change).
        self._read_texts: dict[str, str] = {}
        assert isinstance(self.mapper, PydanticMapper)
        self.mapper.texts = self.text

    def _open(self, env: dict[str, str] | None) -> None:
        """Open (and on first use create) the store. Processes creating a new SQLite store
        at the same instant can trip over each other: the library records its tracking
        table's layout once (the slower insert fails) and SQLite may report the file locked
        while another process sets it up. Once the tables exist, opening again succeeds."""
        sqlite = self.backend == "sqlite"
        for attempt in range(1, 6):
            try:
                super().__init__(env)
                return
            except (IntegrityError, OperationalError, sqlite3.OperationalError):
                if not sqlite or attempt == 5:
                    raise
                time.sleep(0.05 * attempt)

    def construct_mapper(self) -> Mapper[str]:
        return PydanticMapper(self._max_event_bytes or max_event_bytes())

    def construct_recorder(self) -> ProcessRecorder:
        # A process recorder: policies write their new events and their tracking position
        # in one transaction, in the same log as everything else. On SQLite, ours: the log
        # read by event type through an index (PostgreSQL's is named by its environment,
        # `postgres.postgres_env`).
        if self.backend == "sqlite":
            from eventsourcing.sqlite import SQLiteFactory

            from controlroom.eventstore.sqlite_recorder import TopicIndexedSQLiteRecorder

            factory = self.factory
            if isinstance(factory, SQLiteFactory) and not factory.env.get(
                factory.PROCESS_RECORDER_TOPIC
            ):
                recorder = TopicIndexedSQLiteRecorder(factory.datastore)
                if factory.env_create_table():
                    recorder.create_table()
                return recorder
        return self.factory.process_recorder()

    @property
    def process_recorder(self) -> ProcessRecorder:
        assert isinstance(self.recorder, ProcessRecorder)
        return self.recorder

    @classmethod
    def for_workspace(
        cls,
        workspace: Path,
        spec: str | None = None,
        *,
        max_event_bytes: int | None = None,
        crash_after_commit: int | None = None,
    ) -> EventStore:
        return cls(
            env=store_env(workspace, spec),
            max_event_bytes=max_event_bytes,
            crash_after_commit=crash_after_commit,
        )

    def observe(self, observer: CommitObserver) -> None:
        with self._observers_lock:
            self._observers.append(observer)

    def unobserve(self, observer: CommitObserver) -> None:
        with self._observers_lock:
            if observer in self._observers:
                self._observers.remove(observer)

    # The library's `save` is replaced, not added to: this is the only way events are written.
    def save(  # type: ignore[override]
        self, *aggregates: Aggregate, tracking: Tracking | None = None
    ) -> list[Positioned]:
        """Append the aggregates' pending events (and a tracking position) atomically.

        Raises IntegrityError when another writer already recorded one of those versions
        (optimistic concurrency) or that tracking position; PayloadTooLargeError past the
        size limit. Nothing is recorded in either case.
        """
        self._store_texts_first(aggregates)
        events = [e for aggregate in aggregates for e in aggregate.collect_events()]
        if not events and tracking is None:
            return []
        committed = self._put(events, tracking)
        self._announce(committed, tracking)
        return committed

    def save_group(self, aggregates: Sequence[Aggregate]) -> list[list[Positioned] | Exception]:
        """Commit several aggregates' pending events in one transaction (group commit, see
        `group_commit.py`): what each committed, or the error that refused it.

        When the transaction is refused because of one of them (a conflict, an event too
        large), each is committed on its own, so only that one fails. A store fault
        (StoreUnavailableError) is raised: none of them was recorded.
        """
        refused: dict[int, Exception] = {}
        for index, aggregate in enumerate(aggregates):
            try:  # a text too large refuses its own aggregate's commit, not the group's
                self._store_texts_first([aggregate])
            except PayloadTooLargeError as exc:
                refused[index] = exc
        batches = [aggregate.collect_events() for aggregate in aggregates]
        for index in refused:
            batches[index] = []
        events = [e for batch in batches for e in batch]
        if not events:
            return [refused.get(index, []) for index in range(len(batches))]
        try:
            committed = self._put(events, None)
        except (IntegrityError, PayloadTooLargeError):
            return [
                refused[index] if index in refused else self._save_alone(batch)
                for index, batch in enumerate(batches)
            ]
        self._announce(committed, None)
        outcomes: list[list[Positioned] | Exception] = []
        start = 0
        for index, batch in enumerate(batches):
            outcomes.append(refused.get(index) or committed[start : start + len(batch)])
            start += len(batch)
        return outcomes

    async def save_soon(self, aggregate: Aggregate) -> list[Positioned]:
        """`save` from an event loop without blocking it: the aggregate joins the next
        group commit (one writer thread for the whole process)."""
        with self._observers_lock:
            if self._committer is None:
                self._committer = GroupCommitter(self.save_group)
            committer = self._committer
        committed = await committer.save(aggregate)
        assert isinstance(committed, list)
        return committed

    def _store_texts_first(self, aggregates: Sequence[Aggregate]) -> None:
        """Write the texts the aggregates' pending events refer to by hash (a request's
        system text, domain/texts.py) before the commit that refers to them: once per store,
        in a commit of their own, so a text another writer stores at the same moment is
        never a conflict for a run. A crash in between leaves a text nobody refers to yet,
        which the resumed step refers to."""
        wanted: list[tuple[str, str, datetime]] = []
        for aggregate in aggregates:
            take = getattr(aggregate, "take_texts", None)
            if take is None:
                continue
            at = aggregate.modified_on or datetime.now(UTC)
            wanted.extend((digest, text, at) for digest, text in take().items())
        new = [
            StoredText.of(at, text)
            for digest, text, at in wanted
            if digest not in self._stored_texts and not self._holds_text(digest)
        ]
        if new:
            try:
                self._announce(self._put([e for t in new for e in t.collect_events()], None), None)
            except IntegrityError:  # one of them was stored meanwhile: each on its own
                for text in new:
                    with contextlib.suppress(IntegrityError):
                        self.save(text)
        self._stored_texts.update(digest for digest, _, _ in wanted)

    def put_recorded(self, events: Sequence[DomainEvent]) -> None:
        """Events recorded in another store, written here as they are (ids, versions, times
        and hashes kept): a replay's copy of the runs an eval it replays forks."""
        self._announce(self._put(list(events), None), None)

    def _holds_text(self, digest: str) -> bool:
        return bool(self.recorder.select_events(text_id(digest), limit=1))

    def text(self, digest: str) -> str | None:
        """One stored text by its sha256 (None when absent), kept once read."""
        found = self._read_texts.get(digest)
        if found is None:
            found = self.texts([digest]).get(digest)
            if found is not None:
                if len(self._read_texts) >= _READ_TEXTS_KEPT:
                    self._read_texts.clear()
                self._read_texts[digest] = found
        return found

    def texts(self, digests: Sequence[str]) -> dict[str, str]:
        """The stored texts among these, by sha256 (absent ones are left out)."""
        found: dict[str, str] = {}
        for digest in digests:
            for event in self.stream(text_id(digest)):
                if isinstance(event, TextStored):
                    found[digest] = event.text
        return found

    def _save_alone(self, events: list[DomainEvent]) -> list[Positioned] | Exception:
        if not events:
            return []
        try:
            committed = self._put(events, None)
        except (IntegrityError, PayloadTooLargeError) as exc:
            return exc
        self._announce(committed, None)
        return committed

    def _put(self, events: Sequence[object], tracking: Tracking | None) -> list[Positioned]:
        try:
            if events:
                recordings = self.events.put(events, tracking=tracking)  # type: ignore[arg-type]
            else:
                assert tracking is not None
                self.process_recorder.insert_tracking(tracking)
                recordings = []
        except (OperationalError, InterfaceError) as exc:
            # The database went away (or is locked past its timeout, or its disk is full):
            # nothing was recorded, the command can be retried once it is back. Not a
            # conflict, not a bad input.
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise StoreUnavailableError(
                f"the event store is unavailable ({self.location()}): {reason}; nothing was "
                "recorded, and unfinished runs resume once it is back",
                fault_kind(exc) or "unavailable",
            ) from exc
        return [
            Positioned(r.notification.id, r.domain_event)  # type: ignore[arg-type]
            for r in recordings
        ]

    def _announce(self, committed: list[Positioned], tracking: Tracking | None) -> None:
        self.commits += 1
        if self._crash_after is not None and self.commits >= self._crash_after:
            os.kill(os.getpid(), signal.SIGKILL)
        with self._observers_lock:
            observers = list(self._observers)
        for observer in observers:
            observer(committed=committed, tracking=tracking)

    def load(self, aggregate_cls: type[A], aggregate_id: str) -> A | None:
        try:
            found = self.repository.get(aggregate_id, projector_func=aggregate_cls.project)
        except AggregateNotFoundError:
            return None
        assert isinstance(found, aggregate_cls)
        return found

    def stream(self, aggregate_id: str) -> list[DomainEvent]:
        events = list(self.events.get(aggregate_id))
        return [e for e in events if isinstance(e, DomainEvent)]

    def decode(self, stored: StoredEvent, position: int | None = None) -> DomainEvent | Damaged:
        """The event, or what is wrong with it: never raises for a bad record, and reports
        each damaged one once (log and `damaged`), so one poison event stops no reader."""
        try:
            event = self.mapper.to_domain_event(stored)
            assert isinstance(event, DomainEvent)
            return event
        except Exception as exc:
            cause = exc.__cause__ or exc
            reason = " ".join(str(cause).split())[:300] or type(cause).__name__
            damaged = Damaged(
                position,
                str(stored.originator_id),
                stored.originator_version,
                stored.topic,
                reason,
            )
            key = (damaged.originator_id, damaged.originator_version)
            if key not in self.damaged:
                self.damaged[key] = damaged
                logger.warning("damaged event skipped: %s", damaged)
            return damaged

    def stream_records(self, aggregate_id: str) -> list[DomainEvent | Damaged]:
        """One aggregate's records in version order, each decoded or reported damaged."""
        return [self.decode(stored) for stored in self.recorder.select_events(aggregate_id)]

    def read_log(
        self, after: int = 0, topics: Sequence[str] = (), batch: int = 500
    ) -> Iterator[Positioned]:
        """Every readable event after a global position, in order, in batches. A record
        that cannot be decoded is reported (`damaged`, a warning) and skipped."""
        cursor = after
        while True:
            notes = self.recorder.select_notifications(
                start=cursor, limit=batch, topics=topics, inclusive_of_start=False
            )
            for note in notes:
                event = self.decode(note, note.id)
                if isinstance(event, DomainEvent):
                    yield Positioned(note.id, event)
            if len(notes) < batch:
                return
            cursor = notes[-1].id

    def close(self) -> None:
        with self._observers_lock:
            committer, self._committer = self._committer, None
        if committer is not None:
            committer.close()  # commits what is queued first
        super().close()

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite file holding the log, None for other backends (or memory)."""
        name = self.env.get("SQLITE_DBNAME") if self.backend == "sqlite" else None
        if not name or name == ":memory:" or name.startswith("file:"):
            return None
        return Path(name)

    def location(self) -> str:
        """Where the log lives, for people: a file, a database (no password), or memory."""
        return location_of(self.env)

    def max_position(self) -> int:
        return self.recorder.max_notification_id() or 0

    def tracked_position(self, name: str) -> int:
        return self.process_recorder.max_tracking_id(name) or 0


__all__ = [
    "CommitObserver",
    "Damaged",
    "EventStore",
    "IntegrityError",
    "Positioned",
    "Tracking",
]
