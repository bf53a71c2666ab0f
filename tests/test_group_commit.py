"""The group committer: what queues while it commits goes in its next transaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from controlroom.eventstore.group_commit import GroupCommitter


class GatedStore:
    """A `save_group` that holds its first transaction until told to go on."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.first_started = threading.Event()
        self.go_on = threading.Event()

    def save_group(self, aggregates: Sequence[object]) -> list[object]:
        if not self.groups:
            self.first_started.set()
            assert self.go_on.wait(10)
        self.groups.append([str(a) for a in aggregates])
        return [ValueError(f"{a} refused") if str(a) == "bad" else f"saved {a}" for a in aggregates]


@pytest.mark.timeout(20)
def test_saves_queued_during_a_commit_share_the_next_transaction() -> None:
    store = GatedStore()
    committer = GroupCommitter(store.save_group)

    async def scenario() -> list[object]:
        first = asyncio.ensure_future(committer.save("a0"))
        await asyncio.to_thread(store.first_started.wait, 10)
        rest = [asyncio.ensure_future(committer.save(f"a{n}")) for n in range(1, 11)]
        await asyncio.sleep(0)  # every one of them is queued behind the first commit
        store.go_on.set()
        return list(await asyncio.gather(first, *rest))

    try:
        results = asyncio.run(scenario())
    finally:
        committer.close()
    assert results == [f"saved a{n}" for n in range(11)]
    assert store.groups == [["a0"], [f"a{n}" for n in range(1, 11)]]
    assert (committer.transactions, committer.aggregates) == (2, 11)


@pytest.mark.timeout(20)
def test_each_caller_hears_its_own_error() -> None:
    store = GatedStore()
    store.go_on.set()
    committer = GroupCommitter(store.save_group)

    async def scenario() -> tuple[object, BaseException | None]:
        good = await committer.save("good")
        try:
            await committer.save("bad")
        except ValueError as exc:
            return good, exc
        return good, None

    try:
        good, error = asyncio.run(scenario())
    finally:
        committer.close()
    assert good == "saved good"
    assert isinstance(error, ValueError) and "bad refused" in str(error)


@pytest.mark.timeout(20)
def test_a_store_fault_reaches_every_caller_of_the_group() -> None:
    def down(aggregates: Sequence[object]) -> list[object]:
        raise ConnectionError("the database went away")

    committer = GroupCommitter(down)

    async def scenario() -> list[BaseException | object]:
        calls = [committer.save(n) for n in range(5)]
        return list(await asyncio.gather(*calls, return_exceptions=True))

    try:
        outcomes = asyncio.run(scenario())
    finally:
        committer.close()
    assert all(isinstance(o, ConnectionError) for o in outcomes)


def test_closing_an_idle_committer_is_immediate_and_repeatable() -> None:
    committer = GroupCommitter(lambda aggregates: list(aggregates))
    committer.close()
    assert asyncio.run(committer.save("x")) == "x"  # it starts again when used
    committer.close()
    committer.close()
