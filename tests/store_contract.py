"""What every event store backend must do, written once and subclassed per backend.

A backend's test class sets `store_spec` (the `CONTROLROOM_STORE` value naming it) and
whether it is `durable`; nothing else. A PostgreSQL class joins the same way:

    class TestPostgreSQLEventStore(EventStoreContract):
        store_spec = os.environ.get("CONTROLROOM_TEST_POSTGRES", "")

(skipped while the variable is unset). Every test gets a fresh, empty store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pytest

from controlroom.api.history import read_stream
from controlroom.domain.errors import PayloadTooLargeError
from controlroom.domain.issue import Issue, IssueClosed, IssueOpened
from controlroom.eventstore.config import MAX_EVENT_BYTES_VAR, store_env
from controlroom.eventstore.store import EventStore, IntegrityError, Positioned, Tracking

AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)


def opened(issue_id: str, detail: str = "d") -> Issue:
    return Issue.open(
        issue_id,
        AT,
        kind="k",
        title=f"title of {issue_id}",
        detail=detail,
        run_id="run_1",
        session_id="sess_1",
        recipe_id="r",
        check={"check": "slot_not_null"},
        evidence={"found": ["green"]},
    )


def opened_and_closed(issue_id: str) -> Issue:
    issue = opened(issue_id)
    issue.close(AT + timedelta(seconds=1), "fixed")
    return issue


class EventStoreContract:
    #: The `CONTROLROOM_STORE` value naming the backend under test.
    store_spec: ClassVar[str]
    #: Whether events outlive the store object (a file or a server, not process memory).
    durable: ClassVar[bool] = True

    @pytest.fixture
    def workspace(self, tmp_path: Path) -> Path:
        return tmp_path

    @pytest.fixture
    def store(self, workspace: Path) -> Iterator[EventStore]:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        store = self.open_store(workspace)
        yield store
        store.close()

    def open_store(self, workspace: Path) -> EventStore:
        return EventStore(env=store_env(workspace, self.store_spec))

    def test_an_empty_store_has_no_events_and_its_log_ends_at_position_zero(
        self, store: EventStore
    ) -> None:
        assert store.max_position() == 0
        assert list(store.read_log()) == []
        assert store.stream("iss_none") == []
        assert store.load(Issue, "iss_none") is None

    def test_committed_events_read_back_exactly_and_in_version_order(
        self, store: EventStore
    ) -> None:
        issue = opened_and_closed("iss_1")
        pending = list(issue._pending)
        store.save(issue)
        read = store.stream("iss_1")
        assert read == pending
        assert [type(e) for e in read] == [IssueOpened, IssueClosed]
        assert [e.stored_json() for e in read] == [e.stored_json() for e in pending]
        assert read[0].timestamp == AT

    def test_loading_rebuilds_the_aggregate_from_its_events(self, store: EventStore) -> None:
        store.save(opened_and_closed("iss_1"))
        rebuilt = store.load(Issue, "iss_1")
        assert rebuilt is not None
        assert (rebuilt.version, rebuilt.status, rebuilt.title) == (2, "closed", "title of iss_1")
        assert store.load(Issue, "iss_other") is None

    def test_a_writer_behind_the_stream_is_refused_and_writes_nothing(
        self, workspace: Path, store: EventStore
    ) -> None:
        store.save(opened("iss_1"))
        other = self.open_store(workspace) if self.durable else store  # another process
        try:
            first = store.load(Issue, "iss_1")
            second = other.load(Issue, "iss_1")
            assert first is not None and second is not None
            first.close(AT, "by the first writer")
            store.save(first)
            second.close(AT, "by the second writer")
            with pytest.raises(IntegrityError):
                other.save(second)
        finally:
            if other is not store:
                other.close()
        closed = store.stream("iss_1")[-1]
        assert isinstance(closed, IssueClosed) and closed.resolution == "by the first writer"
        assert store.max_position() == 2

    def test_a_commit_is_all_or_nothing(self, store: EventStore) -> None:
        store.save(opened("iss_1"))
        again = opened_and_closed("iss_1")  # version 1 is taken, version 2 is free
        with pytest.raises(IntegrityError):
            store.save(again)
        assert [e.originator_version for e in store.stream("iss_1")] == [1]
        assert store.max_position() == 1

    def test_global_positions_count_up_from_one_in_commit_order_across_aggregates(
        self, store: EventStore
    ) -> None:
        committed = []
        for issue_id in ("iss_b", "iss_a", "iss_c"):
            committed += store.save(opened_and_closed(issue_id))
        log = list(store.read_log())
        assert [p.position for p in log] == list(range(1, 7))
        assert log == committed
        assert [p.event.originator_id for p in log[::2]] == ["iss_b", "iss_a", "iss_c"]
        assert store.max_position() == 6

    def test_several_aggregates_save_together_or_not_at_all(self, store: EventStore) -> None:
        store.save(opened("iss_taken"))
        with pytest.raises(IntegrityError):
            store.save(opened("iss_new"), opened("iss_taken"))
        assert store.stream("iss_new") == [] and store.max_position() == 1
        saved = store.save(opened("iss_new"), opened_and_closed("iss_other"))
        # A refused transaction may use up positions (a PostgreSQL sequence does): positions
        # only ever grow, in commit order; they need not be consecutive.
        positions = [p.position for p in saved]
        assert positions == sorted(positions) and positions[0] > 1
        assert [p.event.originator_id for p in saved] == ["iss_new", "iss_other", "iss_other"]
        assert list(store.read_log(after=1)) == saved

    def test_observers_hear_each_durable_commit_with_its_positions(self, store: EventStore) -> None:
        heard: list[tuple[list[Positioned], Tracking | None]] = []

        def observer(
            *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
        ) -> None:
            heard.append((list(committed), tracking))

        store.observe(observer)
        first = store.save(opened("iss_1"))
        with pytest.raises(IntegrityError):
            store.save(opened("iss_1"))
        store.unobserve(observer)
        store.save(opened("iss_2"))
        assert heard == [(first, None)] and first[0].position == 1

    def test_a_group_commit_records_several_aggregates_in_one_transaction(
        self, store: EventStore
    ) -> None:
        heard: list[list[Positioned]] = []
        store.observe(lambda *, committed, **_: heard.append(list(committed)))
        commits = store.commits
        outcomes = store.save_group([opened("iss_a"), opened_and_closed("iss_b"), opened("iss_c")])
        assert store.commits == commits + 1
        assert [[p.event.originator_id for p in o] for o in outcomes if isinstance(o, list)] == [
            ["iss_a"],
            ["iss_b", "iss_b"],
            ["iss_c"],
        ]
        assert heard == [[p for o in outcomes if isinstance(o, list) for p in o]]
        assert list(store.read_log()) == heard[0]

    def test_a_group_commit_refuses_only_the_aggregate_that_conflicts(
        self, workspace: Path, store: EventStore
    ) -> None:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        store.save(opened("iss_taken"))
        first, taken, last = store.save_group(
            [opened("iss_first"), opened("iss_taken"), opened_and_closed("iss_last")]
        )
        assert isinstance(taken, IntegrityError)
        assert isinstance(first, list) and isinstance(last, list)
        assert [e.originator_version for e in store.stream("iss_taken")] == [1]
        assert [p.event.originator_id for p in store.read_log(after=1)] == [
            "iss_first",
            "iss_last",
            "iss_last",
        ]

    def test_a_group_commit_refuses_only_the_aggregate_with_an_oversized_event(
        self, workspace: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        monkeypatch.setenv(MAX_EVENT_BYTES_VAR, "2048")
        store = self.open_store(workspace)
        try:
            small, big = store.save_group([opened("iss_small"), opened("iss_big", "x" * 5000)])
            assert isinstance(big, PayloadTooLargeError)
            assert isinstance(small, list) and len(small) == 1
            assert store.stream("iss_big") == [] and store.max_position() >= 1
            assert [p.event.originator_id for p in store.read_log()] == ["iss_small"]
        finally:
            store.close()

    def test_saving_soon_from_many_tasks_at_once_commits_each_once(self, store: EventStore) -> None:
        async def save_all() -> list[list[Positioned]]:
            issues = [opened_and_closed(f"iss_{n:02}") for n in range(40)]
            return list(await asyncio.gather(*(store.save_soon(i) for i in issues)))

        results = asyncio.run(save_all())
        assert [len(r) for r in results] == [2] * 40
        log = list(store.read_log())
        assert sorted(p.position for r in results for p in r) == [p.position for p in log]
        assert sorted({p.event.originator_id for p in log}) == [f"iss_{n:02}" for n in range(40)]

    def test_a_reaction_and_its_tracking_position_are_recorded_together(
        self, store: EventStore
    ) -> None:
        store.save(opened("iss_1"))
        reaction = store.load(Issue, "iss_1")
        assert reaction is not None
        reaction.close(AT, "closed by a policy")
        store.save(reaction, tracking=Tracking(notification_id=1, application_name="closer"))
        assert store.tracked_position("closer") == 1
        assert store.tracked_position("another") == 0
        late = opened("iss_2")
        with pytest.raises(IntegrityError):  # position 1 was already processed
            store.save(late, tracking=Tracking(notification_id=1, application_name="closer"))
        assert store.stream("iss_2") == [] and store.max_position() == 2
        store.save(tracking=Tracking(notification_id=2, application_name="closer"))
        assert store.tracked_position("closer") == 2 and store.max_position() == 2

    @pytest.mark.parametrize("tracked", [True, False], ids=["with tracking", "without"])
    def test_a_commit_of_several_megabytes_is_recorded_whole(
        self, store: EventStore, tracked: bool
    ) -> None:
        """A group commit of many runs, or chapter-sized slots, makes large transactions
        (on PostgreSQL one of 5 MB once hung in psycopg's pipeline mode; a commit without
        tracking goes another way there, in one statement)."""
        store.save(opened("iss_0"))
        chapter = "It was a dark and stormy night; the rain fell in torrents. " * 1_000
        issues = [opened(f"iss_{n}", detail=f"{n} {chapter}") for n in range(1, 101)]
        tracking = Tracking(notification_id=1, application_name="bulk") if tracked else None
        store.save(*issues, tracking=tracking)
        assert store.max_position() == 101
        assert store.tracked_position("bulk") == (1 if tracked else 0)
        assert [p.position for p in store.read_log(after=1)] == list(range(2, 102))
        (last,) = store.stream("iss_100")
        assert isinstance(last, IssueOpened) and last.detail.startswith("100 It was")

    def test_a_commit_of_a_thousand_events_gets_their_positions_in_commit_order(
        self, store: EventStore
    ) -> None:
        """SQLite writes a commit's events in statements of several rows each (500 at most):
        the positions handed back must still be each event's own, in order."""
        issues = [opened_and_closed(f"iss_{n:04}") for n in range(600)]
        committed = store.save(*issues)
        assert [p.position for p in committed] == list(range(1, 1201))
        assert list(store.read_log()) == committed
        assert [(p.event.originator_id, p.event.originator_version) for p in committed[:4]] == [
            ("iss_0000", 1),
            ("iss_0000", 2),
            ("iss_0001", 1),
            ("iss_0001", 2),
        ]

    @pytest.mark.parametrize("batch", [1, 3, 500])
    def test_reading_the_log_after_a_position_resumes_strictly_after_it(
        self, store: EventStore, batch: int
    ) -> None:
        for n in range(7):
            store.save(opened(f"iss_{n}"))
        for after in range(8):
            positions = [p.position for p in store.read_log(after=after, batch=batch)]
            assert positions == list(range(after + 1, 8))

    def test_the_log_filtered_by_topics_keeps_global_positions(self, store: EventStore) -> None:
        store.save(opened_and_closed("iss_1"))
        store.save(opened("iss_2"))
        store.save(opened_and_closed("iss_3"))
        closed = list(store.read_log(topics=[IssueClosed.topic()]))
        assert [(p.position, p.event.originator_id) for p in closed] == [(2, "iss_1"), (5, "iss_3")]
        assert [p.position for p in store.read_log(after=2, topics=[IssueClosed.topic()])] == [5]
        both = store.read_log(topics=[IssueOpened.topic(), IssueClosed.topic()], batch=2)
        assert [p.position for p in both] == [1, 2, 3, 4, 5]

    def test_the_log_read_by_event_type_is_the_whole_log_filtered(self, store: EventStore) -> None:
        """Reads by type (through an index on SQLite and PostgreSQL) page through the log as
        a filter of it would: the same records, in order, whatever the start, the stop, the
        page size and the list of types."""
        for n in range(6):
            store.save(opened_and_closed(f"iss_{n}") if n % 3 == 0 else opened(f"iss_{n}"))
        head = store.max_position()
        everything = store.recorder.select_notifications(start=None, limit=100)
        assert len(everything) == head == 8
        one, other = IssueClosed.topic(), IssueOpened.topic()
        for topics in ([one], [other, one], [one, other, one], ["NoSuchType"]):
            for start in (None, 0, 1, 2, 5, head):
                for stop in (None, 3, head):
                    for limit in (1, 2, 100):
                        for inclusive in (True, False):
                            got = store.recorder.select_notifications(
                                start, limit, stop, topics, inclusive_of_start=inclusive
                            )
                            low = 0 if start is None else start + (0 if inclusive else 1)
                            expected = [
                                n
                                for n in everything
                                if n.topic in topics and low <= n.id <= (stop or head)
                            ][:limit]
                            assert got == expected, (topics, start, stop, limit, inclusive)

    def test_one_stream_reads_with_its_global_positions(self, store: EventStore) -> None:
        store.save(opened("iss_1"))
        store.save(opened_and_closed("iss_2"))
        reopened = store.load(Issue, "iss_1")
        assert reopened is not None
        reopened.close(AT, "later")
        store.save(reopened)
        history = list(read_stream(store, "iss_1"))
        assert [(p.position, p.event.originator_version) for p in history] == [(1, 1), (4, 2)]
        assert [p.position for p in read_stream(store, "iss_1", after=1)] == [4]
        assert list(read_stream(store, "iss_1", after=4)) == []
        assert list(read_stream(store, "iss_none")) == []

    def test_an_event_over_the_size_limit_is_refused_and_nothing_is_written(
        self, workspace: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        monkeypatch.setenv(MAX_EVENT_BYTES_VAR, "2048")
        store = self.open_store(workspace)
        try:
            with pytest.raises(PayloadTooLargeError, match="over the limit of 2048 bytes"):
                store.save(opened("iss_big", detail="x" * 5000))
            assert store.max_position() == 0 and store.stream("iss_big") == []
            store.save(opened("iss_small"))
            assert store.max_position() == 1
        finally:
            store.close()

    def test_committed_events_outlive_the_store_object(
        self, workspace: Path, store: EventStore
    ) -> None:
        if not self.durable:
            pytest.skip("this backend keeps events in process memory only")
        store.save(opened_and_closed("iss_1"))
        store.close()
        again = self.open_store(workspace)
        try:
            assert [p.position for p in again.read_log()] == [1, 2]
            assert [e.type_name for e in again.stream("iss_1")] == ["IssueOpened", "IssueClosed"]
        finally:
            again.close()
