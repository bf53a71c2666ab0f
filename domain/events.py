"""The base of every stored event: frozen, closed pydantic models in a hash chain.

Each event carries the hash of its predecessor in the aggregate's stream and a hash of
its own content (type, position, time, payload). A changed, missing or reordered event
therefore breaks the chain, which `replay --verify` reports.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr

from domain.canonical import sha256_text

GENESIS_HASH = "0" * 64
_EMPTY_HASH = '"event_hash":""'


def _digest(type_name: str, body: str) -> str:
    return sha256_text(f"{type_name}\n{body}")


class DomainEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Events stay readable under their stored type name even if the class moves.
    type_name: ClassVar[str] = ""

    originator_id: str
    originator_version: int
    timestamp: datetime
    prev_hash: str
    event_hash: str = ""
    _stored_json: str | None = PrivateAttr(default=None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type_name = cls.__name__

    @classmethod
    def sealed(cls, **fields: Any) -> Self:
        """Build the event and stamp it with the hash of its own content.

        The JSON made for the hash is kept, with the hash written in, as the event's
        stored form: one serialization per event on the write path.
        """
        unsealed = cls(**fields)
        body = unsealed.model_dump_json()
        digest = _digest(cls.type_name, body)
        event = unsealed.model_copy(update={"event_hash": digest})
        # The first `"event_hash":""` is the field itself: the envelope comes first, and
        # a quote inside any string value would be escaped.
        event._stored_json = body.replace(_EMPTY_HASH, f'"event_hash":"{digest}"', 1)
        return event

    def __eq__(self, other: object) -> bool:
        # Equal events have equal fields; the cached stored form is not part of identity.
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.originator_id, self.originator_version))

    def content_hash(self) -> str:
        """sha256 of the type name and the event's JSON with an empty `event_hash` (fields
        in declaration order, as stored), so verifying recomputes exactly what sealing did."""
        body = self.model_copy(update={"event_hash": ""}).model_dump_json()
        return _digest(self.type_name, body)

    def stored_json(self) -> str:
        """The event as the store keeps it."""
        return self._stored_json if self._stored_json is not None else self.model_dump_json()

    def payload(self) -> dict[str, Any]:
        """The event's own fields, without the envelope every event shares."""
        return self.model_dump(
            mode="json",
            exclude={"originator_id", "originator_version", "timestamp", "prev_hash", "event_hash"},
        )
