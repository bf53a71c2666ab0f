"""The base of every stored event: frozen, closed pydantic models in a hash chain.

Each event carries the hash of its predecessor in the aggregate's stream and a hash of
its own content (type, position, time, payload). A changed, missing or reordered event
therefore breaks the chain, which `replay --verify` reports.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

from domain.canonical import sha256_text

GENESIS_HASH = "0" * 64


class DomainEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Events stay readable under their stored type name even if the class moves.
    type_name: ClassVar[str] = ""

    originator_id: str
    originator_version: int
    timestamp: datetime
    prev_hash: str
    event_hash: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type_name = cls.__name__

    @classmethod
    def sealed(cls, **fields: Any) -> Self:
        """Build the event and stamp it with the hash of its own content."""
        unsealed = cls(**fields)
        return unsealed.model_copy(update={"event_hash": unsealed.content_hash()})

    def content_hash(self) -> str:
        """sha256 of the type name and the event's JSON (fields in declaration order,
        as stored), so verifying a stored event recomputes exactly this."""
        body = self.model_dump_json(exclude={"event_hash"})
        return sha256_text(f"{self.type_name}\n{body}")

    def payload(self) -> dict[str, Any]:
        """The event's own fields, without the envelope every event shares."""
        return self.model_dump(
            mode="json",
            exclude={"originator_id", "originator_version", "timestamp", "prev_hash", "event_hash"},
        )
