"""Live event feeds over SSE. `id` is the event's global position in the store, so a client
that reconnects with `Last-Event-ID` (or `?after=`) resumes strictly after it: nothing
missed, nothing twice. A run's feed ends after the run's final event."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable

from sse_starlette import EventSourceResponse
from starlette.requests import Request

from controlroom.api.errors import HttpError
from controlroom.api.hub import encode_message
from controlroom.api.server import Server
from controlroom.domain.run_events import TERMINAL_EVENTS
from controlroom.eventstore.store import Positioned

PING_VAR = "CONTROLROOM_SSE_PING_S"
Filter = Callable[[Positioned], bool]


def resume_position(request: Request) -> int:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    if not raw.strip().isdigit():
        raise HttpError(400, "bad_position", f"'{raw}' is not an event position", "after")
    return int(raw)


async def follow(
    server: Server,
    after: int,
    wanted: Filter,
    ends: Filter,
    finished: Callable[[], bool] = lambda: False,
    wants_partials: Callable[[str], bool] = lambda run_id: False,
) -> AsyncIterator[bytes]:
    if finished():
        # A finished run's feed is all history: read it and end, no waiting.
        for item in server.ctx.store.read_log(after=after):
            if wanted(item):
                yield encode_message(item)
                if ends(item):
                    return
        return
    async for delivery in server.hub.deliveries(after):
        if delivery.item is None:
            if wants_partials(delivery.run_id):
                yield delivery.message
        elif wanted(delivery.item):
            yield delivery.message
            if ends(delivery.item):
                return


def stream(generator: AsyncIterator[bytes]) -> EventSourceResponse:
    ping = float(os.environ.get(PING_VAR, "15") or "15")
    return EventSourceResponse(generator, ping=ping)


def run_stream(server: Server, request: Request, run_id: str) -> EventSourceResponse:
    after = resume_position(request)

    def wanted(item: Positioned) -> bool:
        return item.event.originator_id == run_id

    def ends(item: Positioned) -> bool:
        return wanted(item) and isinstance(item.event, TERMINAL_EVENTS)

    def finished() -> bool:
        view = server.read_views().run(run_id)
        return view is not None and view.run["status"] in ("done", "failed", "cancelled")

    return stream(
        follow(
            server,
            after,
            wanted,
            ends,
            finished,
            lambda partial_run: partial_run == run_id,
        )
    )


def log_stream(server: Server, request: Request) -> EventSourceResponse:
    after = resume_position(request)
    run_id = request.query_params.get("run_id")
    types = {t for t in request.query_params.get("type", "").split(",") if t}

    def wanted(item: Positioned) -> bool:
        return (run_id is None or item.event.originator_id == run_id) and (
            not types or item.event.type_name in types
        )

    def wants_partials(partial_run: str) -> bool:
        return (run_id is None or partial_run == run_id) and (not types or "partial" in types)

    return stream(follow(server, after, wanted, lambda _: False, wants_partials=wants_partials))
