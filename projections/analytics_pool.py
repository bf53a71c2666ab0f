"""Analytics' own threads for the server's requests, and a bounded wait for them.

A query can run for minutes and take the file's lock meanwhile; on the event loop's default
pool (`asyncio.to_thread`) a few of them would hold the threads that runs need. Here they
run on a small pool of their own; past `workers + queue` requests in flight the next is
refused at once (`AnalyticsBusyError`), and each is answered by its time limit (a moment
after, at most) whatever it waits for: one still waiting is dropped, one running is
interrupted.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Final, TypeVar

from controlroom.domain.errors import ControlRoomError
from controlroom.projections.analytics_query import QueryTicket

T = TypeVar("T")

#: How long past its time limit a request waits for its own thread's answer (a query
#: interrupted at the limit says so itself, and more precisely) before it answers anyway.
GRACE_S: Final = 1.0


class AnalyticsBusyError(ControlRoomError):
    """Too many analytics requests are running or waiting; try again shortly."""


class QueryPool:
    """At most `workers` requests run at once, and `queue` more wait their turn."""

    def __init__(self, workers: int, queue: int) -> None:
        self.workers, self.queue = workers, queue
        self._guard = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None  # made by the first request
        self._tickets: set[QueryTicket] = set()
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Requests running or waiting (one interrupted counts until its thread is free)."""
        with self._guard:
            return len(self._tickets)

    @property
    def running(self) -> int:
        """Requests whose DuckDB query has started."""
        with self._guard:
            return sum(ticket.started for ticket in self._tickets)

    async def run(self, work: Callable[[], T], ticket: QueryTicket) -> T:
        """`work` on a thread of the pool, answered within `ticket`'s time limit."""
        waiting = asyncio.wrap_future(self._submit(work, ticket))
        try:
            done, _ = await asyncio.wait({waiting}, timeout=ticket.remaining() + GRACE_S)
        except BaseException:  # the request was cancelled (its client went away)
            waiting.cancel()
            ticket.cancel()
            raise
        if not done or waiting.cancelled():  # out of time, or dropped by `close`
            waiting.cancel()  # still waiting for a thread: it never starts
            ticket.cancel()  # running: DuckDB's query is interrupted
            raise ticket.timed_out()
        return waiting.result()

    def close(self) -> None:
        """Stop every request: those waiting never start, running queries are interrupted."""
        with self._guard:
            self._closed = True
            tickets, executor = list(self._tickets), self._executor
        for ticket in tickets:
            ticket.cancel()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _submit(self, work: Callable[[], T], ticket: QueryTicket) -> Future[T]:
        with self._guard:
            if self._closed:
                raise AnalyticsBusyError("analytics is shutting down with the server")
            if len(self._tickets) >= self.workers + self.queue:
                raise AnalyticsBusyError(
                    f"too many analytics queries at once: {len(self._tickets)} are running or "
                    f"waiting (at most {self.workers} run and {self.queue} wait); try again "
                    "shortly"
                )
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="controlroom-analytics"
                )
            future = self._executor.submit(work)
            self._tickets.add(ticket)
        future.add_done_callback(partial(self._finished, ticket))
        return future

    def _finished(self, ticket: QueryTicket, future: Future[T]) -> None:
        with self._guard:
            self._tickets.discard(ticket)
