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
from controlroom.domain.child_runs import ChildRunStarted
from controlroom.domain.events import EVENT_TYPES, parse_topic
from controlroom.domain.run_events import TERMINAL_EVENTS, RunStarted
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
    """A finished run's feed is all history: its whole stream, page by page, then the end.
    Not up to its first ending event: a failed run may have been retried or resumed since,
    and its page must show what followed (and the status it ended with)."""
    while True:
        page = await run_in_threadpool(_encoded_stream_page, store, run_id, after)
        for _item, message in page:
            yield message
        if not page:  # not `< PAGE`: a damaged record is skipped, yet more may follow
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


#: Live streams open now in this process (`/metrics`: `controlroom_sse_clients`).
OPEN_STREAMS = 0


async def opened(feed: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    global OPEN_STREAMS
    OPEN_STREAMS += 1
    try:
        yield OPENING
        async for message in feed:
            yield message
    finally:
        OPEN_STREAMS -= 1


def stream(feed: AsyncIterator[bytes], ping: float) -> EventSourceResponse:
    return EventSourceResponse(opened(feed), ping=ping)


def run_stream(server: Server, request: Request, run_id: str) -> EventSourceResponse:
    after = resume_position(request)
    if request.query_params.get("tree", "").lower() in ("1", "true", "yes"):
        return tree_stream(server, after, run_id)

    def wanted(item: Positioned) -> bool:
        return item.event.originator_id == run_id

    def ends(item: Positioned) -> bool:
        # Only the run's latest event ends its feed: a retried or resumed run's stream holds
        # earlier endings, and a feed read from its start must go on past them.
        return (
            wanted(item)
            and isinstance(item.event, TERMINAL_EVENTS)
            and run_has_ended(server.ctx.store, run_id)
        )

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


def tree_stream(server: Server, after: int, root_id: str) -> EventSourceResponse:
    """`?tree=1`: the run's events and those of every run below it (seed 004's child runs),
    in log order; the feed ends after the root's final event. A child joins the feed when
    its parent's `ChildRunStarted` passes (or, started before `after`, from the runs'
    records)."""
    members = {root_id}

    def wanted(item: Positioned) -> bool:
        event = item.event
        if isinstance(event, RunStarted) and event.origin and event.origin.root_run_id == root_id:
            members.add(event.originator_id)  # committed with (and may come before) its
            # parent's ChildRunStarted
        if event.originator_id not in members:
            return False
        if isinstance(event, ChildRunStarted):
            members.add(event.run_id)
        return True

    def ends(item: Positioned) -> bool:
        return item.event.originator_id == root_id and isinstance(item.event, TERMINAL_EVENTS)

    async def feed() -> AsyncIterator[bytes]:
        store = server.ctx.store
        members.update(await run_in_threadpool(_tree_members, store, root_id))
        if await run_in_threadpool(run_has_ended, store, root_id):
            for message in await run_in_threadpool(_tree_history, store, members, after):
                yield message
            return
        async for message in follow(server, after, wanted, ends, lambda run: run in members):
            yield message

    return stream(feed(), server.ctx.settings.sse_ping_s)


def _tree_members(store: EventStore, root_id: str) -> set[str]:
    from controlroom.domain.run import Run
    from controlroom.engine.child_policies import tree_runs

    root = store.load(Run, root_id)
    return {root_id} if root is None else {run.id for run in tree_runs(store, root)}


def _tree_history(store: EventStore, members: set[str], after: int) -> list[bytes]:
    """A finished tree's feed: every member's stream, merged in log order."""
    items: list[tuple[Positioned, bytes]] = []
    for run_id in members:
        position = after
        while page := _encoded_stream_page(store, run_id, position):
            items += page
            position = page[-1][0].position
    return [message for _, message in sorted(items, key=lambda pair: pair[0].position)]
