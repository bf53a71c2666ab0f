"""Live event feeds over SSE. `id` is the event's global position in the store, so a client
that reconnects with `Last-Event-ID` (or `?after=`) resumes strictly after it: nothing
missed, nothing twice. A run's feed ends after the run's final event."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable

from sse_starlette import EventSourceResponse
from starlette.requests import Request

from api.errors import HttpError
from api.server import Server
from domain.run_events import TERMINAL_EVENTS
from eventstore.store import Positioned

PING_VAR = "CONTROLROOM_SSE_PING_S"
Filter = Callable[[Positioned], bool]


def resume_position(request: Request) -> int:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    if not raw.strip().isdigit():
        raise HttpError(400, "bad_position", f"'{raw}' is not an event position", "after")
    return int(raw)


def message(item: Positioned) -> dict[str, str]:
    event = item.event
    data = {
        "position": item.position,
        "run_id": event.originator_id,
        "version": event.originator_version,
        "type": event.type_name,
        "timestamp": event.timestamp.isoformat().replace("+00:00", "Z"),
        "data": event.payload(),
    }
    return {
        "id": str(item.position),
        "event": event.type_name,
        "data": json.dumps(data, ensure_ascii=False),
    }


async def follow(
    server: Server,
    request: Request,
    after: int,
    wanted: Filter,
    ends: Filter,
    finished: Callable[[], bool] = lambda: False,
) -> AsyncIterator[dict[str, str]]:
    cursor = after
    while True:
        seen = server.notifier.generation
        done = finished()  # asked before reading, so no final event can slip past
        for item in server.ctx.store.read_log(after=cursor):
            cursor = item.position
            if wanted(item):
                yield message(item)
                if ends(item) or await request.is_disconnected():
                    return
        if done or await request.is_disconnected():
            return
        await server.notifier.wait(seen)


def stream(generator: AsyncIterator[dict[str, str]]) -> EventSourceResponse:
    ping = float(os.environ.get(PING_VAR, "15") or "15")
    return EventSourceResponse(generator, ping=ping, send_timeout=30)


def run_stream(server: Server, request: Request, run_id: str) -> EventSourceResponse:
    after = resume_position(request)

    def wanted(item: Positioned) -> bool:
        return item.event.originator_id == run_id

    def ends(item: Positioned) -> bool:
        return wanted(item) and isinstance(item.event, TERMINAL_EVENTS)

    def finished() -> bool:
        view = server.read_views().run(run_id)
        return view is not None and view.run["status"] in ("done", "failed", "cancelled")

    return stream(follow(server, request, after, wanted, ends, finished))


def log_stream(server: Server, request: Request) -> EventSourceResponse:
    after = resume_position(request)
    run_id = request.query_params.get("run_id")
    types = {t for t in request.query_params.get("type", "").split(",") if t}

    def wanted(item: Positioned) -> bool:
        return (run_id is None or item.event.originator_id == run_id) and (
            not types or item.event.type_name in types
        )

    return stream(follow(server, request, after, wanted, lambda _: False))
