"""The event store: configuration, the pydantic mapper, size limit, ordered log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from controlroom.domain.errors import PayloadTooLargeError, StoreConfigError
from controlroom.domain.issue import Issue, IssueOpened
from controlroom.eventstore.config import store_env
from controlroom.eventstore.mapper import PydanticMapper
from controlroom.eventstore.store import EventStore

AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)


def issue(issue_id: str, detail: str = "d") -> Issue:
    return Issue.open(
        issue_id,
        AT,
        kind="k",
        title="t",
        detail=detail,
        run_id="run_1",
        session_id="sess_1",
        recipe_id="r",
        check={"check": "slot_not_null"},
        evidence={"found": ["green"]},
    )


def test_the_default_store_is_a_sqlite_file_in_the_workspace(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    assert env["SQLITE_DBNAME"] == str(tmp_path / ".control-room" / "events.sqlite")
    assert store_env(tmp_path, "sqlite:///tmp/x.sqlite")["SQLITE_DBNAME"] == "/tmp/x.sqlite"
    assert store_env(tmp_path, "sqlite:rel.sqlite")["SQLITE_DBNAME"] == str(tmp_path / "rel.sqlite")
    assert store_env(tmp_path, "memory")["PERSISTENCE_MODULE"] == "eventsourcing.popo"


@pytest.mark.parametrize("spec", ["postgresql://localhost/db", "redis://x", "sqlite:"])
def test_unusable_store_settings_are_clear_errors(tmp_path: Path, spec: str) -> None:
    with pytest.raises(StoreConfigError):
        store_env(tmp_path, spec)


@pytest.mark.parametrize("spec", ["memory", None])
def test_events_round_trip_exactly_through_the_store(tmp_path: Path, spec: str | None) -> None:
    store = EventStore.for_workspace(tmp_path, spec)
    original = issue("iss_1")
    events = list(original._pending)
    store.save(original)
    loaded = store.stream("iss_1")
    assert loaded == events
    assert isinstance(loaded[0], IssueOpened) and loaded[0].timestamp == AT
    rebuilt = store.load(Issue, "iss_1")
    assert rebuilt is not None and rebuilt.version == 1 and rebuilt.title == "t"
    assert store.load(Issue, "iss_missing") is None


def test_the_log_reads_in_global_order_with_positions(tmp_path: Path) -> None:
    store = EventStore.for_workspace(tmp_path)
    for n in range(7):
        store.save(issue(f"iss_{n}"))
    positions = [p.position for p in store.read_log(batch=3)]
    assert positions == list(range(1, 8))
    assert [p.position for p in store.read_log(after=5)] == [6, 7]
    assert store.max_position() == 7


def test_an_event_over_the_size_limit_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    store = EventStore.for_workspace(tmp_path)
    store.mapper = PydanticMapper(max_event_bytes=2048)
    store.events.mapper = store.mapper
    with pytest.raises(PayloadTooLargeError, match="over the limit of 2048 bytes"):
        store.save(issue("iss_big", detail="x" * 5000))
    assert store.max_position() == 0
    store.save(issue("iss_small"))
    assert store.max_position() == 1


def test_a_store_can_be_reopened_from_its_file(tmp_path: Path) -> None:
    store = EventStore.for_workspace(tmp_path)
    store.save(issue("iss_1"))
    store.close()
    again = EventStore.for_workspace(tmp_path)
    assert [p.event.originator_id for p in again.read_log()] == ["iss_1"]
