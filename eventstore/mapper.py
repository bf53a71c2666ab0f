"""Maps pydantic events to the library's stored events and back.

Events are stored under their declared names (`RunStarted`, `RunStarted.v2`), never under a
module path; see `controlroom.domain.events` for names, versions and upcasters.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from eventsourcing.persistence import (
    JSONTranscoder,
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
)
from pydantic import ValidationError

# Importing the event modules registers their stored names: a process that only reads
# (an auditor, a projection) must know every bundled event type.
from controlroom.domain import issue as _issue_events  # noqa: F401
from controlroom.domain import run_events as _run_events  # noqa: F401
from controlroom.domain.errors import PayloadTooLargeError
from controlroom.domain.events import EVENT_TYPES, DomainEvent, parse_topic
from controlroom.domain.texts import attached_value


def _validate_stored(cls: type[DomainEvent], state: bytes) -> DomainEvent:
    try:
        return cls.model_validate_json(state)
    except ValidationError as exc:
        # pydantic's JSON parser stops at 200 levels of nesting, below what its serializer
        # writes: releases before the edge limits stored such events. They are whole and
        # hashed, so read them the slower way rather than call them damaged.
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise
        return cls.model_validate(orjson.loads(state))


class PydanticMapper(Mapper[str]):
    def __init__(self, max_event_bytes: int) -> None:
        super().__init__(transcoder=JSONTranscoder())
        self.max_event_bytes = max_event_bytes
        #: The store's stored text by sha256 (None when absent): what puts an event's
        #: detached fields back (`DomainEvent.detached_texts`, domain/texts.py).
        self.texts: Callable[[str], str | None] | None = None

    def to_stored_event(self, domain_event: object) -> StoredEvent:
        assert isinstance(domain_event, DomainEvent), type(domain_event)
        # The whole event, ids included, so reading it back is one validate_json call.
        state = domain_event.stored_json().encode("utf-8")
        if len(state) > self.max_event_bytes:
            raise PayloadTooLargeError(domain_event.type_name, len(state), self.max_event_bytes)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=domain_event.topic(),
            state=state,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEvent:
        try:
            name, version = parse_topic(stored_event.topic)
            cls = EVENT_TYPES.get(name)
            if version == cls.class_version:
                event = _validate_stored(cls, stored_event.state)
            else:
                _, state = EVENT_TYPES.upcast(stored_event.topic, orjson.loads(stored_event.state))
                event = cls.model_validate(state)
            if (event.originator_id, event.originator_version) != (
                str(stored_event.originator_id),
                stored_event.originator_version,
            ):
                raise ValueError("the record's id or version differs from the event's own")
            for field, digest in event.detached_texts().items():
                if self.texts is None:
                    raise ValueError(f"its {field} is a stored text, and no store was given")
                event.attach(field, attached_value(digest, self.texts(digest)))
        except Exception as exc:
            raise MapperDeserialisationError(
                f"cannot read event {stored_event.originator_id} "
                f"v{stored_event.originator_version} ({stored_event.topic}): {exc}"
            ) from exc
        # Kept as stored: verification hashes exactly these bytes.
        if version == cls.class_version:
            event.keep_stored(stored_event.state.decode("utf-8"))
        return event
