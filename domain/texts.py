"""Prompt texts stored once per store, by their sha256, and referred to from requests.

A model request's system text is its prompt template, rendered: the same few kilobytes in
every run of a recipe (40% of a main-job run's bytes when each request carried its own copy).
Its user text is the step's inputs, rendered: the same whenever they are (the planner's
phase-A context on an unchanged workspace, a retry, a review sent back with the same draft).
So a recorded request (`ModelRequestRecorded.body`) keeps each long message text as
`{"role": "system", "content_sha256": "…"}` (or a top-level `"system_sha256"` for bodies
that carry the system text apart, as Anthropic's do), and the text itself is one
`TextStored` event in the stream `text_<sha256>`, written once per store before the first
commit that refers to it (eventstore/store.py). `join_body` puts the texts back: what
`show --request` prints, and the request's `ref` (the sha256 of the whole body as sent),
are unchanged.

Requests recorded before this carry their texts inline (earlier still, their user texts
always) and read as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import ControlRoomError
from controlroom.domain.events import DomainEvent

TEXT_PREFIX = "text_"
#: Shorter texts are kept inline: a reference would not be smaller.
MIN_STORED_CHARS = 256


class TextStored(DomainEvent):
    type_name: ClassVar[str] = "TextStored"

    sha256: str
    text: str


class StoredText(Aggregate):
    """One text, under the id its content names: storing it twice is storing it once."""

    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.text = ""

    @classmethod
    def of(cls, at: datetime, text: str) -> StoredText:
        digest = sha256_text(text)
        stored = cls(text_id(digest))
        stored._trigger(TextStored, at, sha256=digest, text=text)
        return stored

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, TextStored):
            self.text = event.text


def text_id(sha256: str) -> str:
    return TEXT_PREFIX + sha256


class TextMissingError(ControlRoomError):
    """A request refers to a text the store does not hold (or holds altered)."""


def split_body(body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The body with each long message text replaced by its sha256, and those texts by
    hash. Structured contents (a list of parts) stay inline."""
    texts: dict[str, str] = {}

    def ref(text: str) -> str:
        digest = sha256_text(text)
        texts[digest] = text
        return digest

    split: dict[str, Any] = {}
    for key, value in body.items():
        if key == "system" and _long_text(value):
            split["system_sha256"] = ref(value)
        elif key == "messages" and isinstance(value, list):
            split[key] = [
                _swap(m, "content", "content_sha256", ref)
                if isinstance(m, dict) and _long_text(m.get("content"))
                else m
                for m in value
            ]
        else:
            split[key] = value
    return split, texts


def detached_output(output: object) -> str | None:
    """A receipt's output as the text stored apart, when it is long (None: it stays
    inline): its JSON as the event would have held it, keys in their order, so what reads
    it back (a slot written to a file) sees the same value the run did."""
    text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) >= MIN_STORED_CHARS else None


def attached_value(digest: str, text: str | None) -> Any:
    """The value a detached text holds, checked against its hash."""
    if text is None or sha256_text(text) != digest:
        state = "is missing from the store" if text is None else "does not match its hash"
        raise TextMissingError(f"the text sha256:{digest} {state}")
    return json.loads(text)


def referred_texts(body: Mapping[str, Any]) -> list[str]:
    """The sha256 of every text a recorded body refers to."""
    found = [body["system_sha256"]] if "system_sha256" in body else []
    for message in body.get("messages") or ():
        if isinstance(message, dict) and "content_sha256" in message:
            found.append(message["content_sha256"])
    return found


def join_body(body: Mapping[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """The body as it was sent: every referred text put back in its place, checked against
    its hash. Raises TextMissingError naming the text when one is absent or altered."""

    def text(digest: str) -> str:
        found = texts.get(digest)
        if found is None or sha256_text(found) != digest:
            state = "is missing from the store" if found is None else "does not match its hash"
            raise TextMissingError(f"the request's text sha256:{digest} {state}")
        return found

    joined: dict[str, Any] = {}
    for key, value in body.items():
        if key == "system_sha256":
            joined["system"] = text(value)
        elif key == "messages" and isinstance(value, list):
            joined[key] = [
                _swap(m, "content_sha256", "content", text)
                if isinstance(m, dict) and "content_sha256" in m
                else m
                for m in value
            ]
        else:
            joined[key] = value
    return joined


def _long_text(value: object) -> bool:
    return isinstance(value, str) and len(value) >= MIN_STORED_CHARS


def _swap(message: dict[str, Any], old: str, new: str, convert: Any) -> dict[str, Any]:
    """The message with `old` replaced by `new` in the same place (key order is kept, so a
    joined body serializes as the one sent did)."""
    return {(new if k == old else k): (convert(v) if k == old else v) for k, v in message.items()}
