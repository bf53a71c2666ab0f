"""One reader of the event log for every SSE subscriber in this process.

Each new event is read from the store, decoded and formatted once, then kept in a bounded
in-memory window that every subscriber filters. A subscriber that asks for positions
older than the window reads them from the store first, then joins the window. This keeps
delivery cost flat as subscribers are added.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sse_starlette import EventSourceResponse, ServerSentEvent

from api.notify import LogNotifier
from eventstore.store import EventStore, Positioned

WINDOW = 20_000
SEPARATOR = EventSourceResponse.DEFAULT_SEPARATOR


@dataclass(frozen=True)
class Delivery:
    item: Positioned
    #: The SSE message, encoded once for every subscriber.
    message: bytes


def encode_message(item: Positioned) -> bytes:
    fields = format_message(item)
    return ServerSentEvent(
        data=fields["data"], event=fields["event"], id=fields["id"], sep=SEPARATOR
    ).encode()


def format_message(item: Positioned) -> dict[str, str]:
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


class EventHub:
    def __init__(self, store: EventStore, notifier: LogNotifier) -> None:
        self.store = store
        self.notifier = notifier
        self.window: deque[Delivery] = deque(maxlen=WINDOW)
        self.head = store.max_position()  # the window starts at the log's end
        self._published = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._read_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _read_new(self) -> bool:
        fresh = [
            Delivery(item, encode_message(item)) for item in self.store.read_log(after=self.head)
        ]
        if fresh:
            self.window.extend(fresh)
            self.head = fresh[-1].item.position
            published, self._published = self._published, asyncio.Event()
            published.set()
        return bool(fresh)

    async def _read_forever(self) -> None:
        while True:
            seen = self.notifier.generation
            self._read_new()
            await self.notifier.wait(seen)

    async def deliveries(self, after: int) -> AsyncIterator[Delivery]:
        """Every event after `after`, in order, forever; the caller stops iterating."""
        cursor = after
        while True:
            oldest = self.window[0].item.position if self.window else self.head + 1
            if cursor < oldest - 1:
                # Older than the window: from the store, up to where the window begins.
                for item in self.store.read_log(after=cursor):
                    if item.position >= oldest:
                        break
                    cursor = item.position
                    yield Delivery(item, encode_message(item))
                continue
            waiter = self._published
            for delivery in list(self.window):
                if delivery.item.position > cursor:
                    cursor = delivery.item.position
                    yield delivery
            if cursor >= self.head:
                await waiter.wait()
