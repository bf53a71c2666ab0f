"""Wakes SSE streams and the projector when this process commits events.

Other processes' commits are picked up by polling (the wait's timeout), so a run
advanced by the CLI still reaches SSE clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from controlroom.eventstore.store import Positioned

POLL_SECONDS = 0.5


class LogNotifier:
    def __init__(self) -> None:
        self._waiters: set[asyncio.Event] = set()
        #: Bumped on every commit; a reader notes it before reading, so a commit that
        #: lands between its read and its wait is never slept through.
        self.generation = 0

    def __call__(self, batch: Sequence[Positioned]) -> None:
        self.notify()

    def notify(self) -> None:
        self.generation += 1
        for waiter in self._waiters:
            waiter.set()

    async def wait(self, seen: int, timeout: float = POLL_SECONDS) -> None:
        """Return when a commit newer than generation `seen` happens, or after `timeout`."""
        if self.generation != seen:
            return
        waiter = asyncio.Event()
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)
