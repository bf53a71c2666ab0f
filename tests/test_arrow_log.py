"""The log read in bulk as Arrow columns: the same records the recorder gives, every backend."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore import arrow_log
from controlroom.eventstore.arrow_log import RAW_SCHEMA, arrow_reader
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from tests.postgres import postgres_store_spec as postgres_store_spec


@pytest.fixture(params=["memory", "sqlite", "sqlite, a child process reading", "postgresql"])
def store(
    request: pytest.FixtureRequest, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[EventStore]:
    spec = {"memory": "memory", "postgresql": None}.get(request.param, "sqlite:events.sqlite")
    if spec is None:
        spec = request.getfixturevalue("postgres_store_spec")
    if "child" in request.param:  # every stretch, however short, read by the child
        monkeypatch.setattr(arrow_log, "CHILD_MIN_RECORDS", 1)
    store = EventStore(env=store_env(workspace, spec))
    ctx = Context.open(workspace, store=store)
    service = RunService(ctx)
    asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    yield store
    store.close()


def recorded(store: EventStore, after: int = 0, limit: int = 10**6) -> list[tuple[object, ...]]:
    notes = store.recorder.select_notifications(after, limit, inclusive_of_start=False)
    return [(n.id, str(n.originator_id), n.originator_version, n.topic, n.state) for n in notes]


def as_rows(table: object) -> list[tuple[object, ...]]:
    return [tuple(row.values()) for row in table.to_pylist()]  # type: ignore[attr-defined]


def test_batches_hold_the_recorders_records_in_order(store: EventStore) -> None:
    head = store.max_position()
    with arrow_reader(store) as read:
        first = read(0, head, 7)
        rest = read(int(first.column("position")[-1].as_py()), head, 10**6)
        nothing = read(head, head, 10)
    assert first.schema == RAW_SCHEMA and rest.schema == RAW_SCHEMA
    assert as_rows(first) + as_rows(rest) == recorded(store)
    assert first.num_rows == 7
    assert nothing.num_rows == 0 and nothing.schema == RAW_SCHEMA


def test_reads_stop_at_the_given_position(store: EventStore) -> None:
    with arrow_reader(store) as read:
        part = read(3, 10, 100)
    assert as_rows(part) == [r for r in recorded(store, 3) if int(str(r[0])) <= 10]


def test_a_driver_that_cannot_load_falls_back_to_the_recorder(
    store: EventStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def cannot_load(*_: object) -> None:
        raise OSError("libadbc_driver.so: cannot open shared object file")

    monkeypatch.setattr(arrow_log, "_sqlite", cannot_load)
    monkeypatch.setattr(arrow_log, "_postgres", cannot_load)
    with caplog.at_level(logging.WARNING), arrow_reader(store) as read:
        table = read(0, store.max_position(), 10**6)
    assert as_rows(table) == recorded(store)
    if "SQLITE_DBNAME" in store.env or "POSTGRES_DBNAME" in store.env:
        assert "cannot load the ADBC driver" in caplog.text


def test_the_child_reader_follows_any_order_of_reads_and_reports_its_failure(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arrow_log, "CHILD_MIN_RECORDS", 1)
    store = EventStore(env=store_env(workspace, "sqlite:events.sqlite"))
    ctx = Context.open(workspace, store=store)
    service = RunService(ctx)
    asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    head = store.max_position()
    with arrow_reader(store) as read:
        later = read(10, head, 5)
        earlier = read(2, head, 3)  # not where the stream stood: a new one from there
        shorter = read(5, 8, 100)
    assert as_rows(later) == recorded(store, 10, 5)
    assert as_rows(earlier) == recorded(store, 2, 3)
    assert as_rows(shorter) == recorded(store, 5, 3)
    store.close()

    broken = EventStore(env=store_env(workspace, "sqlite:events.sqlite"))
    broken.recorder.events_table_name = "no_such_table"  # type: ignore[attr-defined]
    with arrow_reader(broken) as read, pytest.raises(OSError, match="log reader process failed"):
        read(0, 100, 10)
    broken.close()
