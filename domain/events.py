"""The base of every stored event: frozen, closed pydantic models in a hash chain.

Each event carries the hash of its predecessor in the aggregate's stream and a hash of
its own content (type, position, time, payload). A changed, missing or reordered event
therefore breaks the chain, which `replay --verify` reports.

**Stored names.** Every concrete event declares the name it is stored under, once:
``type_name: ClassVar[str] = "RunStarted"``. The name is independent of the module and the
class, so moving, renaming or splitting modules never makes a store unreadable. Stores
written before names were declared used module-path topics (``domain.run_events:RunStarted``);
the part after the colon is the stored name, so they read unchanged.

**Versions and upcasters.** An event whose shape changes bumps ``class_version`` and gains a
static method ``upcast_vN_vM(state: dict) -> dict`` for each step (``upcast_v1_v2``, then
``upcast_v2_v3`` ...), taking the stored JSON of the older shape to the next. Events are
stored under ``Name`` at version 1 and ``Name.vN`` above it, so the reader knows which
upcasters to apply; the hash chain always covers the bytes as they were stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Self

import orjson
from pydantic import BaseModel, ConfigDict

from controlroom.domain.canonical import sha256_text

GENESIS_HASH = "0" * 64
_EMPTY_HASH = '"event_hash":""'
_SEALED_HASH = re.compile(r'"event_hash":"[0-9a-f]{64}"')


def _digest(type_name: str, body: str) -> str:
    return sha256_text(f"{type_name}\n{body}")


class UnknownEventTypeError(LookupError):
    """A stored event names a type this release does not know."""


class DomainEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    # The stored form is kept in a slot of its own, not a pydantic private attribute: those
    # cost a few microseconds on every construction and every read of them, for every event
    # written and read (a slot: a tenth of a microsecond). Not a field, so not in
    # `__dict__`, equality or a dump; a copy or an unpickled event goes without it and
    # serializes afresh.
    __slots__ = ("_stored",)

    #: The name the event is stored under; every concrete event declares its own.
    type_name: ClassVar[str] = ""
    #: The shape's version; bump it with an `upcast_vN_vM` for the step.
    class_version: ClassVar[int] = 1

    originator_id: str
    originator_version: int
    timestamp: datetime
    prev_hash: str
    event_hash: str = ""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__dict__.get("abstract_event"):
            return  # a base for events (`JournalRecord`), never stored itself
        declared = cls.__dict__.get("type_name")
        if not declared:
            raise TypeError(
                f"{cls.__qualname__} must declare its stored name: "
                f'type_name: ClassVar[str] = "{cls.__name__}"'
            )
        EVENT_TYPES.register(cls)

    @classmethod
    def sealed(cls, **fields: Any) -> Self:
        """Build the event and stamp it with the hash of its own content.

        The JSON made for the hash is kept, with the hash written in, as the event's
        stored form: one serialization per event on the write path.
        """
        event = cls(**fields)
        body = event.model_dump_json()
        digest = _digest(cls.type_name, body)
        # Stamped in place rather than by `model_copy` (a second object per event): the
        # event is not yet seen by anyone, and the hash is a plain string.
        event.__dict__["event_hash"] = digest
        event.__pydantic_fields_set__.add("event_hash")
        # The first `"event_hash":""` is the field itself: the envelope comes first, and
        # a quote inside any string value would be escaped.
        event.keep_stored(body.replace(_EMPTY_HASH, f'"event_hash":"{digest}"', 1))
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

    def detached_texts(self) -> dict[str, str]:
        """The fields whose value the store keeps apart, as a text (domain/texts.py), by the
        sha256 that names each text: stored as null, put back with `attach` on reading."""
        return {}

    def attach(self, field: str, value: Any) -> None:
        """Put a detached field's value back (`detached_texts`). The stored form, which the
        event's hash covers, is left as it is: it names the value by its sha256."""
        assert field in self.detached_texts(), field
        self.__dict__[field] = value

    def keep_stored(self, stored: str) -> None:
        """Keep STORED as the event's stored form: what sealing made, or the bytes read back
        (verification hashes exactly those)."""
        object.__setattr__(self, "_stored", stored)

    def stored_json(self) -> str:
        """The event as the store keeps it."""
        stored: str | None = getattr(self, "_stored", None)
        # None: built, not sealed (a test's event), or a copy
        return self.model_dump_json() if stored is None else stored

    @classmethod
    def topic(cls) -> str:
        return cls.type_name if cls.class_version == 1 else f"{cls.type_name}.v{cls.class_version}"

    def payload(self) -> dict[str, Any]:
        """The event's own fields, without the envelope every event shares."""
        return self.model_dump(
            mode="json",
            exclude={"originator_id", "originator_version", "timestamp", "prev_hash", "event_hash"},
        )


def stored_content_hash(type_name: str, stored: str) -> str | None:
    """The content hash of an event from its stored bytes, exactly as sealing computed it;
    None when the stored JSON carries no sealed hash at all."""
    body, found = _SEALED_HASH.subn(_EMPTY_HASH, stored, count=1)
    return _digest(type_name, body) if found else None


class EventTypes:
    """Stored name → event class, and the reading of topics old and new."""

    def __init__(self) -> None:
        self._by_name: dict[str, type[DomainEvent]] = {}
        self._all_loaded = False

    def register(self, cls: type[DomainEvent]) -> None:
        existing = self._by_name.get(cls.type_name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise TypeError(
                f"stored name '{cls.type_name}' is taken by {existing.__module__}."
                f"{existing.__qualname__}"
            )
        self._by_name[cls.type_name] = cls

    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def topics_for(self, names: Iterable[str]) -> list[str]:
        """Every stored topic an event of these names may have: each version's, and the
        module-path topic release 0.1 wrote (for filtering the log by type)."""
        topics: list[str] = []
        for name in sorted(names):
            # A name this release does not know (an event of a plugin not loaded) is still
            # filtered for, at version 1.
            version = self._by_name[name].class_version if name in self._by_name else 1
            topics.append(name)
            topics.extend(f"{name}.v{v}" for v in range(2, version + 1))
            topics.extend(t for t, n in LEGACY_TOPICS.items() if n == name)
        return topics

    def get(self, name: str) -> type[DomainEvent]:
        if name not in self._by_name and not self._all_loaded:
            # A command that imports little (a quick read) meets an event whose module it
            # never imported: every event class registers when its module loads, so load
            # them all once rather than read the event as damaged.
            self._all_loaded = True
            _import_domain_modules()
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownEventTypeError(f"unknown event type '{name}'") from None

    def upcast(self, topic: str, state: dict[str, Any]) -> tuple[type[DomainEvent], dict[str, Any]]:
        """The class for a stored topic and its state brought up to the current shape."""
        name, version = parse_topic(topic)
        cls = self.get(name)
        while version < cls.class_version:
            step = getattr(cls, f"upcast_v{version}_v{version + 1}", None)
            if step is None:
                raise UnknownEventTypeError(
                    f"{name} has no upcaster from v{version} to v{version + 1}"
                )
            state = step(state)
            version += 1
        if version > cls.class_version:
            raise UnknownEventTypeError(
                f"{name} v{version} was written by a newer release (this one reads up to "
                f"v{cls.class_version})"
            )
        return cls, state

    def upcast_data(self, topic: str, state: bytes) -> tuple[str, dict[str, Any]]:
        """A stored event as its name and current-shape JSON data, for readers that fold
        JSON without building event objects."""
        name, version = parse_topic(topic)
        data: dict[str, Any] = orjson.loads(state)
        if name in self._by_name and version != self._by_name[name].class_version:
            _, data = self.upcast(topic, data)
        return name, data


def _import_domain_modules() -> None:
    import importlib
    import pkgutil

    from controlroom import domain

    for module in pkgutil.iter_modules(domain.__path__):
        importlib.import_module(f"controlroom.domain.{module.name}")


def parse_topic(topic: str) -> tuple[str, int]:
    """`RunStarted` → (RunStarted, 1); `RunStarted.v2` → (RunStarted, 2); a legacy
    module-path topic `domain.run_events:RunStarted` → (RunStarted, 1)."""
    name = topic.rpartition(":")[2]
    base, dot, suffix = name.rpartition(".v")
    if dot and suffix.isdigit():
        return base, int(suffix)
    return name, 1


EVENT_TYPES = EventTypes()

#: The topics release 0.1 stored events under (module paths), by stored name.
LEGACY_TOPICS = {
    f"{module}:{name}": name
    for module, names in {
        "domain.run_events": (
            "RunStarted StepStarted ReceiptIssued AgentResponded ModelAttemptFailed SlotWritten "
            "StepCompleted StepFailed DodChecked RunCompleted RunFailed RunCancelled RunResumed"
        ),
        "domain.issue": "IssueOpened IssueClosed",
    }.items()
    for name in names.split()
}


class JournalRecord(DomainEvent):
    """What a step records while it runs, before it completes (a file write's intent, a
    loop's finished item, a packet issued): committed at once, kept in the run's journal by
    step instance, so a resumed step knows what it already did. A step kind's own records
    subclass this; the run needs no change to keep them."""

    abstract_event: ClassVar[bool] = True
    step_id: str
    instance_id: str


@dataclass(frozen=True)
class CallFacts:
    """What any model-call event says of its call, read the same way for every kind."""

    role: str
    provider: str
    model: str
    tier: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    attempts: int


class ModelReplyEvent(DomainEvent):
    """The family of events that each record one model reply, wherever it was asked for:
    a step's (`AgentResponded`, a T1 agent's `AgentMicroStepResponded`, a loop's
    `ForEachItemCompleted`), a conference round's (`AgentCallRecorded`), the Chief's for a
    plan (`ModelCalled`). Their stored shapes differ (each kept as written), and `call()`
    reads them alike: usage, latency, cost and attempts for analytics, totals and audits."""

    abstract_event: ClassVar[bool] = True

    def call(self) -> CallFacts:
        raise NotImplementedError


class RecordedLoopCall(JournalRecord, ModelReplyEvent):
    """A model call a step's own loop committed as it returned (a checked loop's draft or
    check, a sentinel's verification or fix): the call's facts, read by `call()`."""

    abstract_event: ClassVar[bool] = True
    agent_id: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    cost_usd: float | None = None
    request_ref: str | None = None

    def role(self) -> str:
        return self.agent_id.rsplit("-", 1)[0]

    def tier_of(self) -> str:
        return ""

    def call(self) -> CallFacts:
        return CallFacts(
            self.role(), self.provider, self.model, self.tier_of(),
            self.input_tokens, self.output_tokens, self.latency_ms, self.cost_usd,
            self.attempts,
        )  # fmt: skip
