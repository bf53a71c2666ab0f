"""Live event feeds over SSE. `id` is the event's global position in the store, so a client
that reconnects with `Last-Event-ID` (or `?after=`) resumes strictly after it: nothing
missed, nothing twice. A run's feed ends after the run's final event.

Every store read here runs in a worker thread, one bounded page at a time: a slow SQLite
read never stalls the other streams on the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from controlroom.api.errors import HttpError
from controlroom.api.history import stream_page
from controlroom.api.hub import SEPARATOR, encode_message
from controlroom.api.limits import LimitError, parse_position
from controlroom.api.server import Server
from controlroom.domain.events import EVENT_TYPES, parse_topic
from controlroom.domain.run_events import TERMINAL_EVENTS
from controlroom.eventstore.store import EventStore, Positioned

#: How long a browser waits before reconnecting after the stream drops, in milliseconds.
RETRY_MS = 2000
#: Transient model output on the feeds; not a stored event type.
PARTIAL = "partial"
Filter = Callable[[Positioned], bool]
TERMINAL_NAMES = frozenset(cls.type_name for cls in TERMINAL_EVENTS)
#: Sent first, at once: the client has the headers and a first byte before any event or
#: ping exists (proxies and some clients hold a response back until its body starts).
OPENING = ServerSentEvent(comment="stream open", retry=RETRY_MS, sep=SEPARATOR).encode()


def resume_position(request: Request) -> int:
    """Where a feed resumes: `Last-Event-ID` (a reconnecting browser) or `?after=`."""
    field, raw = "Last-Event-ID", request.headers.get("last-event-id")
    if not raw:
        field, raw = "after", request.query_params.get("after")
    if not raw:
        return 0
    try:
        return parse_position(raw, field)
    except LimitError as exc:
        raise HttpError(400, "bad_position", exc.reason, field) from None


def requested_types(request: Request) -> set[str]:
    types = {t.strip() for t in request.query_params.get("type", "").split(",") if t.strip()}
    unknown = types - EVENT_TYPES.names() - {PARTIAL}
    if unknown:
        raise HttpError(
            400,
            "unknown_event_type",
            f"unknown event type(s): {', '.join(sorted(unknown))}; known types: "
            f"{', '.join(sorted(EVENT_TYPES.names() | {PARTIAL}))}",
            "type",
        )
    return types


def run_has_ended(store: EventStore, run_id: str) -> bool:
    """From the run's own last event: one indexed read, never the read models (they lag)."""
    last = store.recorder.select_events(run_id, desc=True, limit=1)
    return bool(last) and parse_topic(last[0].topic)[0] in TERMINAL_NAMES


async def finished_run_history(store: EventStore, run_id: str, after: int) -> AsyncIterator[bytes]:
    """A finished run's feed is all history: its own stream, page by page, then the end."""
    while True:
        page = await run_in_threadpool(_encoded_stream_page, store, run_id, after)
        for item, message in page:
            yield message
            if isinstance(item.event, TERMINAL_EVENTS):
                return
        if not page:
            return
        after = page[-1][0].position


def _encoded_stream_page(
    store: EventStore, run_id: str, after: int
) -> list[tuple[Positioned, bytes]]:
    return [(item, encode_message(item)) for item in stream_page(store, run_id, after)]


async def follow(
    server: Server,
    after: int,
    wanted: Filter,
    ends: Filter,
    wants_partials: Callable[[str], bool] = lambda run_id: False,
) -> AsyncIterator[bytes]:
    async for delivery in server.hub.deliveries(after):
        if delivery.item is None:
            if wants_partials(delivery.run_id):
                yield delivery.message
        elif wanted(delivery.item):
            yield delivery.message
            if ends(delivery.item):
                return


async def opened(feed: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield OPENING
    async for message in feed:
        yield message


def stream(feed: AsyncIterator[bytes], ping: float) -> EventSourceResponse:
    return EventSourceResponse(opened(feed), ping=ping)


def run_stream(server: Server, request: Request, run_id: str) -> EventSourceResponse:
    after = resume_position(request)

    def wanted(item: Positioned) -> bool:
        return item.event.originator_id == run_id

    def ends(item: Positioned) -> bool:
        return wanted(item) and isinstance(item.event, TERMINAL_EVENTS)

    async def feed() -> AsyncIterator[bytes]:
        store = server.ctx.store
        if await run_in_threadpool(run_has_ended, store, run_id):
            source = finished_run_history(store, run_id, after)
        else:
            source = follow(server, after, wanted, ends, lambda partial_run: partial_run == run_id)
        async for message in source:
            yield message

    return stream(feed(), server.ctx.settings.sse_ping_s)


def log_stream(server: Server, request: Request) -> EventSourceResponse:
    after = resume_position(request)
    run_id = request.query_params.get("run_id")
    types = requested_types(request)

    def wanted(item: Positioned) -> bool:
        return (run_id is None or item.event.originator_id == run_id) and (
            not types or item.event.type_name in types
        )

    def wants_partials(partial_run: str) -> bool:
        return (run_id is None or partial_run == run_id) and (not types or PARTIAL in types)

    feed = follow(server, after, wanted, lambda _: False, wants_partials=wants_partials)
    return stream(feed, server.ctx.settings.sse_ping_s)
