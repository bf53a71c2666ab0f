"""Phase A of the runs one process executes, taken a few runs at a time, earliest run first.

Phase A is the model-free part of a run: tools over the workspace, all CPU and file reads,
no waiting on a model. When many runs start together (50 requests at once, a plan starting
its tasks), letting every run through its phase A at once makes them advance in lockstep:
each run's first tool, then each run's second... and all of them reach their first model
call only when the last one does. The CPU spent meanwhile overlaps with nothing, and each
later step boundary is again a burst of every run's work at once.

Taken earliest run first, a few at a time, the first runs reach their model calls while
the later ones do their phase A, and from then on one run's CPU work overlaps with the
others' waits on the model. The total work is the same; no run waits for another's model
calls, only for CPU work ahead of it, which on one interpreter it would have waited for
anyway. A few runs at once, not one, so that one run's commit overlaps another's tools
(on PostgreSQL a commit is a round trip: 50 runs at once went from 1.43x the wall time
of one run, all in lockstep, to 1.38x with 2 at once and 1.30x with 8; BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Final

#: A phase A step still running after this long gives up its run's place until it ends
#: (`StepRunner._perform`): one slow tool never holds the other runs back.
LONG_PHASE_A_STEP_S: Final = 0.1


class PhaseAOrder:
    """At most `at_once` runs in their phase A; a freed place goes to the waiting run with
    the lowest rank (the order in which the executor took the runs on)."""

    def __init__(self, at_once: int) -> None:
        if at_once < 1:
            raise ValueError(f"at least one run must be let through phase A, not {at_once}")
        self._free = at_once
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._ranks = itertools.count()
        self._ties = itertools.count()

    def next_rank(self) -> int:
        return next(self._ranks)

    async def enter(self, rank: int) -> None:
        """Wait for a place; a cancelled waiter leaves no place taken."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        place: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (rank, next(self._ties), place))
        try:
            await place
        except asyncio.CancelledError:
            if place.done() and not place.cancelled():
                self.leave()  # given a place just as it was cancelled: hand it on
            else:
                place.cancel()  # skipped when a place is handed out
            raise

    def leave(self) -> None:
        while self._waiting:
            _, _, place = heapq.heappop(self._waiting)
            if not place.done():
                place.set_result(None)
                return
        self._free += 1


class PhaseATurn:
    """One run's place in the order: taken at its first phase A step, held through that
    phase's commits, given up when phase B begins or the run stops (whichever is first)."""

    def __init__(self, order: PhaseAOrder, rank: int) -> None:
        self.order, self.rank = order, rank
        self.held = False

    async def take(self) -> None:
        if not self.held:
            await self.order.enter(self.rank)
            self.held = True

    def give_up(self) -> None:
        if self.held:
            self.held = False
            self.order.leave()
