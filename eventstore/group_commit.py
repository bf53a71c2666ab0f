"""Group commit: one thread commits for every run of a process, several runs per transaction.

Runs executing at once used to hand each commit to a thread of their own. The commits then
queued for the store's single writer, and each hand-over waited for the interpreter's lock
while the event loop was busy (up to its 5 ms switch interval): with 50 runs a commit of
a fraction of a millisecond took 5-10 ms. Here the event loop queues the aggregate and
awaits; one writer thread takes everything queued since its last commit and records it in
one transaction (`EventStore.save_group`), so a busy moment costs one hand-over and one
durable write for all of them. Each caller still gets its own result: a conflict or a
too-large event fails only the aggregate it belongs to.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: What the writer thread reports for one aggregate: its committed events, or the error.
Outcome = object


@dataclass(frozen=True)
class _Pending:
    aggregate: Any
    future: asyncio.Future[object]
    loop: asyncio.AbstractEventLoop


class GroupCommitter:
    def __init__(self, save_group: Callable[[Sequence[Any]], Sequence[Outcome]]) -> None:
        self._save_group = save_group
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        #: Transactions and aggregates committed so far (the benchmark reports the ratio).
        self.transactions = 0
        self.aggregates = 0

    async def save(self, aggregate: Any) -> object:
        """Commit the aggregate's pending events in the next group; returns what
        `save_group` gave for it, or raises the error it met."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()
        self._ensure_started()
        self._queue.put(_Pending(aggregate, future, loop))
        # Not cancelled with the caller: once queued the commit happens, and the run's
        # in-memory state must not run ahead of what the caller believes was recorded.
        return await asyncio.shield(future)

    def close(self) -> None:
        with self._start_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="controlroom-group-commit", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group, stop = [first], False
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                group.append(item)
            self._commit(group)
            if stop:
                return

    def _commit(self, group: list[_Pending]) -> None:
        outcomes: Sequence[Outcome]
        try:
            outcomes = self._save_group([p.aggregate for p in group])
        except BaseException as exc:  # the store is down: every caller hears it
            outcomes = [exc] * len(group)
        self.transactions += 1
        self.aggregates += len(group)
        for pending, outcome in zip(group, outcomes, strict=True):
            # A closed event loop refuses (RuntimeError): nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                pending.loop.call_soon_threadsafe(_settle, pending.future, outcome)


def _settle(future: asyncio.Future[object], outcome: Outcome) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
