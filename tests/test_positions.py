"""Reads cost what is new, not the history: every policy and every projection keeps how far
it has read the log, whether or not it found events to act on, and reads the log by event
type through the store's index (eventstore/sqlite_recorder.py, pg_recorder.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.events import DomainEvent
from controlroom.engine.policies import SKIP_AHEAD, PolicyRunner, bundled_policies
from controlroom.eventstore.store import EventStore
from controlroom.projections import base
from controlroom.projections.views import Views
from tests.store_contract import opened

AT = datetime(2026, 11, 26, tzinfo=UTC)
#: The projections that read a few event types (the runs projection reads every event).
SPARSE = ["issues", "plans", "conferences", "status"]


class _Jotted(DomainEvent):
    """An event no policy and no projection but the runs' (which reads every event) follows."""

    type_name: ClassVar[str] = "TestJotted"
    n: int


class _Jotter(Aggregate):
    def jot(self, n: int) -> None:
        self._trigger(_Jotted, AT, n=n)

    def apply(self, event: DomainEvent) -> None:
        pass


def jot(store: EventStore, count: int, name: str = "jot_1") -> int:
    """`count` events of a type nothing follows, in one commit; returns the head."""
    jotter = store.load(_Jotter, name) or _Jotter(name)
    for n in range(count):
        jotter.jot(n)
    store.save(jotter)
    return store.max_position()


class Reads:
    """Every `select_notifications` call on the store's recorder: (start, stop, rows)."""

    def __init__(self, store: EventStore) -> None:
        self.calls: list[tuple[int, int | None, int]] = []
        select = store.recorder.select_notifications

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = select(*args, **kwargs)
            start = kwargs["start"] if "start" in kwargs else args[0]
            self.calls.append((start, kwargs.get("stop"), len(found)))
            return found

        store.recorder.select_notifications = counted  # type: ignore[method-assign]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    opened = EventStore.for_workspace(tmp_path, f"sqlite:///{tmp_path / 'events.sqlite'}")
    yield opened
    opened.close()


def tracked_views(views: Views) -> dict[str, int]:
    """The positions the views file holds (what another process starts from)."""
    return dict(views.conn.execute("SELECT name, position FROM projection_tracking"))


# -- policies ----------------------------------------------------------------------------------


def test_a_policy_remembers_a_short_stretch_it_does_not_follow_without_a_commit(
    store: EventStore,
) -> None:
    head = jot(store, 20)
    runner = PolicyRunner(store, bundled_policies())
    commits = store.commits
    assert runner.catch_up() == 0
    assert {position for _, position in runner.status()} == {head}
    assert store.commits == commits  # nothing recorded: the stretch is short
    assert {store.tracked_position(p.name) for p in runner.policies} == {0}

    reads = Reads(store)
    assert runner.catch_up() == 0
    assert reads.calls == []  # an idle pass reads nothing

    later = jot(store, 5)
    assert runner.catch_up() == 0
    assert reads.calls and all(start == head for start, _, _ in reads.calls)
    assert {stop for _, stop, _ in reads.calls} == {later}
    assert {position for _, position in runner.status()} == {later}


def test_a_policy_records_its_position_once_it_read_far_past_it(store: EventStore) -> None:
    """A long stretch is recorded: a new process (a CLI command) does not read it again."""
    head = jot(store, SKIP_AHEAD + 10)
    PolicyRunner(store, bundled_policies()).catch_up()
    again = PolicyRunner(store, bundled_policies())
    assert {position for _, position in again.status()} == {head}
    reads = Reads(store)
    assert again.catch_up() == 0
    assert reads.calls == []


# -- projections --------------------------------------------------------------------------------


def test_a_projection_keeps_its_position_at_the_head_it_read(store: EventStore) -> None:
    head = jot(store, 20)
    with Views.for_store(store) as views:
        assert views.catch_up() == 20  # the runs projection reads every event
        assert {s.name: (s.position, s.lag) for s in views.status()} == {
            name: (head, 0) for name in views.names()
        }
        # Written: the runs projection's (it read events); the others only remembered.
        assert tracked_views(views) == {"runs": head, **dict.fromkeys(SPARSE, 0)}

        reads = Reads(store)
        transactions = []
        begin = views.conn.transaction
        views.conn.transaction = (  # type: ignore[method-assign]
            lambda locks: transactions.append(locks) or begin(locks)
        )
        assert views.catch_up() == 0
        assert reads.calls == [] and transactions == []  # idle: no read, no lock

        later = jot(store, 3)
        assert views.catch_up() == 3
        assert all(start == head and stop == later for start, stop, _ in reads.calls)
        assert {s.position for s in views.status()} == {later}


def test_a_projection_writes_its_position_once_it_read_far_past_it(store: EventStore) -> None:
    head = jot(store, base.SKIP_AHEAD + 10)
    with Views.for_store(store) as views:
        views.catch_up()
        assert tracked_views(views) == dict.fromkeys(views.names(), head)
    with Views.for_store(store) as fresh:  # another process's views
        reads = Reads(store)
        assert fresh.catch_up() == 0
        assert reads.calls == []


def test_a_rebuilt_projection_reads_the_log_again_from_its_start(store: EventStore) -> None:
    """What a process remembers of the log never skips what a rebuild must read again."""
    store.save(opened("iss_1"))
    head = jot(store, 20)
    with Views.for_store(store) as views:
        views.catch_up()
        assert [i.issue_id for i in views.query.issues()] == ["iss_1"]
        assert views.rebuild("issues") == 1
        assert [i.issue_id for i in views.query.issues()] == ["iss_1"]
        assert tracked_views(views)["issues"] == head
        assert views.catch_up() == 0


# -- the index on event types -------------------------------------------------------------------


def test_a_store_made_before_the_index_gets_it_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite"
    store = EventStore.for_workspace(tmp_path, f"sqlite:///{path}")
    jot(store, 3)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX stored_events_by_topic")
    store = EventStore.for_workspace(tmp_path, f"sqlite:///{path}")
    try:
        with sqlite3.connect(path) as conn:
            indexes = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
                ("stored_events",),
            ).fetchall()
            assert ("stored_events_by_topic",) in indexes
            statement = store.recorder._statement(2, False)  # type: ignore[attr-defined]
            plan = " ".join(
                str(row[-1])
                for row in conn.execute(
                    f"EXPLAIN QUERY PLAN {statement}", ["a", 0, 9, 5, "b", 0, 9, 5, 5]
                )
            )
        assert "USING COVERING INDEX stored_events_by_topic" in plan
        assert "SCAN stored_events" not in plan
        assert [
            n.id for n in store.recorder.select_notifications(0, 10, topics=["TestJotted"])
        ] == [
            1,
            2,
            3,
        ]
    finally:
        store.close()
