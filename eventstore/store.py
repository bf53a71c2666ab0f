"""The event store application: one log holding runs and issues."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, Mapper, Recording

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.events import DomainEvent
from controlroom.eventstore.config import max_event_bytes, store_env
from controlroom.eventstore.mapper import PydanticMapper

A = TypeVar("A", bound=Aggregate)


@dataclass(frozen=True)
class Positioned:
    """An event with its global position in the store (the SSE id, the replay cursor)."""

    position: int
    event: DomainEvent


class EventStore(Application[str]):
    name = "ControlRoom"

    def construct_mapper(self) -> Mapper[str]:
        return PydanticMapper(max_event_bytes())

    @classmethod
    def for_workspace(cls, workspace: Path, spec: str | None = None) -> EventStore:
        return cls(env=store_env(workspace, spec))

    def commit(self, aggregate: Aggregate) -> list[Recording[str]]:
        """Append the aggregate's pending events in one transaction.

        Raises IntegrityError when another writer already recorded that version
        (optimistic concurrency), PayloadTooLargeError past the size limit.
        """
        return self.events.put(aggregate.collect_events())

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

    def read_log(
        self, after: int = 0, topics: Sequence[str] = (), batch: int = 500
    ) -> Iterator[Positioned]:
        """Every event after a global position, in order, in batches."""
        cursor = after
        while True:
            notes = self.recorder.select_notifications(
                start=cursor, limit=batch, topics=topics, inclusive_of_start=False
            )
            for note in notes:
                event = self.mapper.to_domain_event(note)
                assert isinstance(event, DomainEvent)
                yield Positioned(note.id, event)
            if len(notes) < batch:
                return
            cursor = notes[-1].id

    def max_position(self) -> int:
        return self.recorder.max_notification_id() or 0


__all__ = ["EventStore", "IntegrityError", "Positioned"]
