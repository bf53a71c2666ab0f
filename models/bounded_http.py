"""A model server's response, read within a size limit and never held whole past it.

The providers stop a streamed reply once its text passes `max_reply_chars`. What they
cannot see is one enormous piece: a single server-sent event (or a whole non-streamed
body) of 50 MB is held by the SDK, then parsed, before any text reaches them. So the HTTP
client the SDKs are given counts the bytes of each event (of the whole body, when the
response is not an event stream) as they arrive, and stops reading past the limit with a
`too_large` failure: an agent failure, not retried. The reply is asked for uncompressed, and
a server that compresses it anyway is refused: its size could not be told until it was
unpacked.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from controlroom.domain.errors import ModelCallError

#: Bytes one character of the reply may take on the wire (`\uXXXX` in JSON), and the room
#: an envelope needs around it (ids, usage, a long error message).
BYTES_PER_CHAR = 6
ENVELOPE_BYTES = 64 * 1024
#: What separates two server-sent events (a blank line, in any of the three line endings).
_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


def byte_limit(max_reply_chars: int) -> int:
    """The most bytes one event (or a whole body) may have for a reply of that many
    characters."""
    return max_reply_chars * BYTES_PER_CHAR + ENVELOPE_BYTES


def reply_too_large(max_reply_chars: int, what: str) -> ModelCallError:
    return ModelCallError(
        "too_large",
        f"the reply passed the limit of {max_reply_chars:,} characters ({what}); reading "
        "stopped (the limit follows CONTROLROOM_MAX_EVENT_BYTES: a reply must fit an event)",
    )


def _http_module() -> ModuleType:
    """The HTTP library the SDKs are built on (httpx2 for the pinned releases)."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("neither httpx2 nor httpx is installed")  # the SDKs need one


_HTTP = _http_module()


class _BoundedStream(_HTTP.AsyncByteStream):  # type: ignore[misc, name-defined]
    """The response's byte stream, stopped once one event (or the whole body) is too long."""

    def __init__(
        self, inner: Any, limit_bytes: int, max_reply_chars: int, per_event: bool, refusal: str
    ) -> None:
        self._inner = inner
        self._limit = limit_bytes
        self._chars = max_reply_chars
        self._per_event = per_event
        self._refusal = refusal

    @property
    def elapsed(self) -> Any:
        return getattr(self._inner, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refusal:
            raise ModelCallError("unusable", self._refusal)
        since = 0  # bytes since the last event ended (or since the start)
        tail = b""
        async for chunk in self._inner:
            since += len(chunk)
            if self._per_event:
                window = tail + chunk  # an event's end may straddle two chunks
                ends = [window.rfind(sep) + len(sep) for sep in _EVENT_ENDS if sep in window]
                if ends:
                    since = len(window) - max(ends)
                tail = window[-3:]
            if since > self._limit:
                what = "one server-sent event" if self._per_event else "the response body"
                raise reply_too_large(self._chars, f"{what} passed {self._limit:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_http_client(sdk: ModuleType, max_reply_chars: int) -> Any:
    """The SDK's own default async HTTP client, with the response bound as described."""
    limit = byte_limit(max_reply_chars)

    async def bound(response: Any) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        refusal = ""
        if encoding not in ("", "identity") and response.status_code < 300:
            refusal = (
                f"the server compressed its reply ({encoding}) although asked not to; it "
                "cannot be read within the reply size limit"
            )
        per_event = "text/event-stream" in response.headers.get("content-type", "")
        response.stream = _BoundedStream(
            response.stream, limit, max_reply_chars, per_event, refusal
        )

    return sdk.DefaultAsyncHttpxClient(
        event_hooks={"response": [bound]}, headers={"Accept-Encoding": "identity"}
    )
