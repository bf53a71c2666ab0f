"""Choosing and configuring the event store. What every backend must do is the contract in
`tests/store_contract.py`, run per backend by `tests/test_store_contract.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlroom.domain.errors import StoreConfigError
from controlroom.eventstore.config import (
    DEFAULT_MAX_EVENT_BYTES,
    MAX_EVENT_BYTES_VAR,
    max_event_bytes,
    store_env,
)


def test_the_default_store_is_a_sqlite_file_in_the_workspace(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    assert env["SQLITE_DBNAME"] == str(tmp_path / ".control-room" / "events.sqlite")
    assert store_env(tmp_path, "sqlite:///tmp/x.sqlite")["SQLITE_DBNAME"] == "/tmp/x.sqlite"
    assert store_env(tmp_path, "sqlite:rel.sqlite")["SQLITE_DBNAME"] == str(tmp_path / "rel.sqlite")
    assert store_env(tmp_path, "memory")["PERSISTENCE_MODULE"] == "eventsourcing.popo"


@pytest.mark.parametrize("spec", ["postgresql://localhost/", "redis://x", "sqlite:"])
def test_unusable_store_settings_are_clear_errors(tmp_path: Path, spec: str) -> None:
    with pytest.raises(StoreConfigError):
        store_env(tmp_path, spec)


@pytest.mark.parametrize("raw", ["lots", "100"])
def test_an_unusable_event_size_limit_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(MAX_EVENT_BYTES_VAR, raw)
    with pytest.raises(StoreConfigError, match=MAX_EVENT_BYTES_VAR):
        max_event_bytes()


def test_the_default_event_size_limit_applies_when_unset() -> None:
    assert max_event_bytes() == DEFAULT_MAX_EVENT_BYTES


def _open_store_at(path: str, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    from controlroom.eventstore.store import EventStore

    EventStore(env=store_env(Path(path).parent, f"sqlite:///{path}")).close()


def test_processes_creating_a_new_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for round_ in range(5):
        path = str(tmp_path / f"events-{round_}.sqlite")
        barrier = context.Barrier(4)
        procs = [context.Process(target=_open_store_at, args=(path, barrier)) for _ in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=30)
        assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
