"""One reader of the event log for every SSE subscriber in this process.

Each new event is read from the store, decoded and encoded once, then kept in a bounded
in-memory window that every subscriber filters. A subscriber that asks for positions
older than the window reads them from the store first, then joins the window, so
delivery cost stays flat as subscribers are added. Store reads run in worker threads, one
bounded page at a time, so they never hold up the event loop.

The window also carries transient messages (a model's partial output as it streams).
They have no position and are never stored: a client that reconnects gets every stored
event it missed, but not the partial text that streamed while it was away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from controlroom.api.history import PAGE, log_page
from controlroom.api.notify import LogNotifier
from controlroom.eventstore.store import EventStore, Positioned

T = TypeVar("T")

WINDOW = 20_000
#: Subscribers reading and sending old history at once; the rest wait their turn.
CATCH_UP_TURNS = 2
#: A replaying subscriber pauses after this many messages, so the loop runs other work.
YIELD_EVERY = 25
CATCH_UP_PAUSE_S = 0.005
#: Encoded history pages kept for subscribers replaying the same stretch (500 events each).
CACHED_PAGES = 16
logger = logging.getLogger(__name__)


SEPARATOR = EventSourceResponse.DEFAULT_SEPARATOR


@dataclass(frozen=True)
class Delivery:
    seq: int  # order in this process's window, stored and transient alike
    run_id: str
    item: Positioned | None  # None for a transient message
    message: bytes  # the SSE message, encoded once for every subscriber


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


def encode_message(item: Positioned) -> bytes:
    fields = format_message(item)
    return ServerSentEvent(
        data=fields["data"], event=fields["event"], id=fields["id"], sep=SEPARATOR
    ).encode()


class EventHub:
    def __init__(self, store: EventStore, notifier: LogNotifier) -> None:
        self.store = store
        self.notifier = notifier
        self.window: deque[Delivery] = deque(maxlen=WINDOW)
        self.head = store.max_position()  # the window starts at the log's end
        self.seq = 0
        self._published = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._catch_up_turns = asyncio.Semaphore(CATCH_UP_TURNS)
        self._page_cache: OrderedDict[int, tuple[list[Delivery], int, bool]] = OrderedDict()
        self._cache_lock = threading.Lock()

    def start(self) -> None:
        self._task = asyncio.create_task(self._read_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def publish_partial(
        self, *, run_id: str, step_id: str, attempt: int, text: str, **future: object
    ) -> None:
        """A transient `partial` message: streamed model output, never stored. `attempt`
        tells a retry's text from the first attempt's."""
        data = json.dumps(
            {"run_id": run_id, "step_id": step_id, "attempt": attempt, "text": text},
            ensure_ascii=False,
        )
        self._append(
            [(run_id, None, ServerSentEvent(data=data, event="partial", sep=SEPARATOR).encode())]
        )

    def _append(self, entries: Sequence[tuple[str, Positioned | None, bytes]]) -> None:
        for run_id, item, message in entries:
            self.seq += 1
            self.window.append(Delivery(self.seq, run_id, item, message))
        published, self._published = self._published, asyncio.Event()
        published.set()

    def _encoded_page(self, after: int) -> tuple[list[Delivery], int, bool]:
        """One bounded page of the log after `after`, decoded and encoded, with the last
        position read and whether the page was full (blocking: call it in a worker
        thread). Damaged records are skipped, so the cursor can pass them."""
        page = log_page(self.store, after, PAGE)
        deliveries = [
            Delivery(0, item.event.originator_id, item, encode_message(item)) for item in page.items
        ]
        return deliveries, page.last, page.full

    def _history_page(self, after: int) -> tuple[list[Delivery], int, bool]:
        """`_encoded_page` for subscribers catching up, shared: clients replaying the same
        history read the same pages (every page ends where the next begins), so each full
        page is decoded and encoded once for all of them while it stays in the cache."""
        with self._cache_lock:
            cached = self._page_cache.get(after)
            if cached is not None:
                self._page_cache.move_to_end(after)
                return cached
        page = self._encoded_page(after)
        if page[2]:  # only full pages: history below the head never changes
            with self._cache_lock:
                self._page_cache[after] = page
                while len(self._page_cache) > CACHED_PAGES:
                    self._page_cache.popitem(last=False)
        return page

    async def _read_new(self) -> None:
        while True:
            page, last, full = await run_in_threadpool(self._encoded_page, self.head)
            self.head = last
            if page:
                self._append([(d.run_id, d.item, d.message) for d in page])
            if not full:
                return

    async def _read_forever(self) -> None:
        # One reader serves every subscriber: nothing it meets (a store that is locked or
        # gone for a moment) may end it silently. It reports, waits, and reads again.
        while True:
            seen = self.notifier.generation
            try:
                await self._read_new()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("the live event reader failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            await self.notifier.wait(seen)

    def _oldest_stored(self) -> int:
        for delivery in self.window:
            if delivery.item is not None:
                return delivery.item.position
        return self.head + 1

    async def deliveries(self, after: int) -> AsyncIterator[Delivery]:
        """Every stored event after position `after`, in order, with the transient messages
        published meanwhile; forever, until the caller stops iterating."""
        cursor = after  # the last stored position delivered
        seq: int | None = None  # the last window entry delivered, once joined
        while True:
            oldest = self._oldest_stored()
            window_lost_us = seq is not None and self.window and self.window[0].seq > seq + 1
            if window_lost_us or (seq is None and cursor < oldest - 1):
                seq = None  # too far behind the window: read the gap from the store
                # Replaying subscribers take turns (CATCH_UP_TURNS at once), each turn one
                # page read and delivered: fifty clients replaying from 0 share the loop
                # with the live feeds instead of crowding them out. Pages are shared, so
                # the turns go quickly.
                async with self._catch_up_turns:
                    page, last, full = await run_in_threadpool(self._history_page, cursor)
                    for count, delivery in enumerate(page, 1):
                        assert delivery.item is not None
                        if delivery.item.position >= oldest:
                            break
                        cursor = delivery.item.position
                        yield delivery
                        if count % YIELD_EVERY == 0:
                            # Writing to a fast client never suspends: without a pause,
                            # replays would fill the loop while live events and requests
                            # wait. This caps a turn at YIELD_EVERY / CATCH_UP_PAUSE_S
                            # messages a second.
                            await asyncio.sleep(CATCH_UP_PAUSE_S)
                    else:
                        cursor = max(cursor, min(last, oldest - 1))
                        if full:
                            continue  # more of the gap to read
                # The gap is read (positions may skip numbers: a rolled-back commit).
                cursor = max(cursor, oldest - 1)
                continue
            if seq is None:  # join after the last stored event this subscriber has
                seq = next(
                    (
                        d.seq - 1
                        for d in self.window
                        if d.item is not None and d.item.position > cursor
                    ),
                    self.seq,
                )
            waiter = self._published
            for delivery in list(self.window):
                if delivery.seq > seq:
                    seq = delivery.seq
                    if delivery.item is not None:
                        cursor = delivery.item.position
                    yield delivery
            if seq >= self.seq:
                await waiter.wait()
