"""A small event-sourced aggregate base that works with the eventsourcing library.

Commands validate, then `_trigger` seals an event and applies it. The library's
repository rebuilds an aggregate with `project`; its `save` collects pending events.
Time is always passed in by the caller: nothing here reads the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Self, TypeVar

from controlroom.domain.events import GENESIS_HASH, DomainEvent

E = TypeVar("E", bound=DomainEvent)


class Aggregate:
    def __init__(self, aggregate_id: str) -> None:
        self.id = aggregate_id
        self.version = 0
        self.last_hash = GENESIS_HASH
        self.created_on: datetime | None = None
        self.modified_on: datetime | None = None
        self._pending: list[DomainEvent] = []

    def _trigger(
        self,
        event_class: type[E],
        at: datetime,
        _attached: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> E:
        """Seal and apply an event. `_attached`: detached fields' values (sealed and stored
        as null, `DomainEvent.detached_texts`), which this aggregate applies whole."""
        event = event_class.sealed(
            originator_id=self.id,
            originator_version=self.version + 1,
            timestamp=at,
            prev_hash=self.last_hash,
            **fields,
        )
        for field, value in (_attached or {}).items():
            event.attach(field, value)
        self._apply_envelope(event)
        self._pending.append(event)
        return event

    def _apply_envelope(self, event: DomainEvent) -> None:
        self.apply(event)
        self.version = event.originator_version
        self.last_hash = event.event_hash
        self.created_on = self.created_on or event.timestamp
        self.modified_on = event.timestamp

    def apply(self, event: DomainEvent) -> None:
        """Evolve state from one event. Subclasses dispatch on the event type."""
        raise NotImplementedError

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def collect_events(self) -> list[DomainEvent]:
        pending, self._pending = self._pending, []
        return pending

    @classmethod
    def project(cls, aggregate: Self | None, events: Iterable[DomainEvent]) -> Self | None:
        """Projector for the library's repository: rebuild from stored events."""
        for event in events:
            if aggregate is None:
                aggregate = cls(event.originator_id)
            aggregate._apply_envelope(event)
        return aggregate
