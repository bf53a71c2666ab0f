"""Maps pydantic events to the library's stored events and back."""

from __future__ import annotations

import json

from eventsourcing.persistence import (
    JSONTranscoder,
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
)
from eventsourcing.utils import get_topic, resolve_topic

from domain.errors import PayloadTooLargeError
from domain.events import DomainEvent

_ENVELOPE_IDS = {"originator_id", "originator_version"}


class PydanticMapper(Mapper[str]):
    def __init__(self, max_event_bytes: int) -> None:
        super().__init__(transcoder=JSONTranscoder())
        self.max_event_bytes = max_event_bytes

    def to_stored_event(self, domain_event: object) -> StoredEvent:
        assert isinstance(domain_event, DomainEvent), type(domain_event)
        state = domain_event.model_dump_json(exclude=_ENVELOPE_IDS).encode("utf-8")
        if len(state) > self.max_event_bytes:
            raise PayloadTooLargeError(domain_event.type_name, len(state), self.max_event_bytes)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=get_topic(type(domain_event)),
            state=state,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEvent:
        try:
            cls = resolve_topic(stored_event.topic)
            data = json.loads(stored_event.state)
            data["originator_id"] = str(stored_event.originator_id)
            data["originator_version"] = stored_event.originator_version
            event = cls.model_validate(data)
        except Exception as exc:
            raise MapperDeserialisationError(
                f"cannot read event {stored_event.originator_id} "
                f"v{stored_event.originator_version} ({stored_event.topic}): {exc}"
            ) from exc
        assert isinstance(event, DomainEvent)
        return event
