"""Stable stored names, versions and upcasters; a store written by release 0.1 still reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from eventsourcing.persistence import StoredEvent

from controlroom.domain.events import EVENT_TYPES, DomainEvent, parse_topic
from controlroom.domain.run_events import RunStarted
from controlroom.eventstore.mapper import PydanticMapper
from tests.test_cli_e2e import cli as run_cli

CLI = str(Path(sys.executable).parent / "controlroom")
LEGACY = Path(__file__).parent / "fixtures" / "store_v0_1"
AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)


class Greeted(DomainEvent):
    """A test event at version 2: v1 stored `name`, v2 splits it into two fields."""

    type_name: ClassVar[str] = "TestGreeted"
    class_version: ClassVar[int] = 2
    first: str
    last: str

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> dict[str, Any]:
        first, _, last = state.pop("name").partition(" ")
        return {**state, "first": first, "last": last}


def test_events_are_stored_under_their_declared_name_not_their_module() -> None:
    mapper = PydanticMapper(1 << 20)
    event = RunStarted.model_construct(originator_id="r", originator_version=1)
    assert RunStarted.topic() == "RunStarted"
    assert Greeted.topic() == "TestGreeted.v2"
    assert "RunStarted" in EVENT_TYPES.names()
    sealed = Greeted.sealed(
        originator_id="g", originator_version=1, timestamp=AT, prev_hash="0", first="A", last="B"
    )
    assert mapper.to_stored_event(sealed).topic == "TestGreeted.v2"
    assert event.type_name == "RunStarted"


def test_topics_old_and_new_parse_to_a_name_and_version() -> None:
    assert parse_topic("domain.run_events:RunStarted") == ("RunStarted", 1)
    assert parse_topic("controlroom.domain.run_events:RunStarted") == ("RunStarted", 1)
    assert parse_topic("RunStarted") == ("RunStarted", 1)
    assert parse_topic("TestGreeted.v2") == ("TestGreeted", 2)


def test_an_older_shape_is_upcast_when_read() -> None:
    state = {
        "originator_id": "g",
        "originator_version": 1,
        "timestamp": AT.isoformat(),
        "prev_hash": "0",
        "event_hash": "",
        "name": "Ada Lovelace",
    }
    stored = StoredEvent("g", 1, "TestGreeted", json.dumps(state).encode())
    event = PydanticMapper(1 << 20).to_domain_event(stored)
    assert isinstance(event, Greeted)
    assert (event.first, event.last) == ("Ada", "Lovelace")


def test_an_event_must_declare_its_stored_name() -> None:
    with pytest.raises(TypeError, match="must declare its stored name"):

        class Nameless(DomainEvent):
            x: int


def test_two_classes_cannot_share_a_stored_name() -> None:
    with pytest.raises(TypeError, match="is taken by"):

        class Impostor(DomainEvent):
            type_name: ClassVar[str] = "RunStarted"


def cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTROLROOM_STORE": f"sqlite:///{workspace / 'legacy.sqlite'}"}
    return run_cli(*args, "-w", str(workspace), env=env)


LEGACY_RUNS = {
    "run_37f33d5ebba3c308": "done",
    "run_a2bba5b868e9e337": "failed",
    "run_745917163ef65f86": "cancelled",
    "run_26583f907aa56940": "running",
}


def test_a_store_written_by_release_0_1_lists_replays_and_verifies(workspace: Path) -> None:
    shutil.copy(LEGACY / "events.sqlite", workspace / "legacy.sqlite")
    listed = json.loads(cli(workspace, "runs", "--json").stdout)
    assert {r["run_id"]: r["status"] for r in listed} == LEGACY_RUNS
    for run_id, status in LEGACY_RUNS.items():
        verified = cli(workspace, "replay", run_id, "--verify")
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["status"] == status
        shown = cli(workspace, "show", run_id, "--json")
        assert json.loads(shown.stdout)["status"] == status
    issues = json.loads(cli(workspace, "issues", "--json").stdout)
    assert [i["issue_id"] for i in issues] == ["iss_b88f0a52560d70b985d1a0b1"]


def test_a_run_killed_under_release_0_1_resumes_to_the_end(workspace: Path) -> None:
    shutil.copy(LEGACY / "events.sqlite", workspace / "legacy.sqlite")
    resumed = cli(workspace, "resume", "run_26583f907aa56940", "-q")
    assert resumed.returncode == 1, resumed.stderr  # the planted canon error fails its DoD
    shown = json.loads(cli(workspace, "show", "run_26583f907aa56940", "--json").stdout)
    assert shown["status"] == "failed"
    assert [s["status"] for s in shown["steps"]] == ["done"] * 4
    assert cli(workspace, "replay", "run_26583f907aa56940", "--verify").returncode == 0


RELEASE_0_2 = Path(__file__).parent / "fixtures" / "store_v0_2"
RUNS_0_2 = {
    "run_412820b39362eeaa": "done",
    "run_1c0c70053d888567": "failed",
    "run_89c4963d38c7ee47": "failed",
    "run_ea2b119ea9dc8cfa": "cancelled",
    "run_7f26b773d46cb8a3": "done",
    "run_2533bf572da091b6": "done",
    "run_c4cb57594073ed4b": "running",
    "run_2ab82df41f37a1977a1fb954": "failed",
}


@pytest.mark.long
def test_a_store_written_by_release_0_2_lists_replays_and_verifies(workspace: Path) -> None:
    shutil.copy(RELEASE_0_2 / "events.sqlite", workspace / "legacy.sqlite")
    listed = json.loads(cli(workspace, "runs", "--json").stdout)
    assert {r["run_id"]: r["status"] for r in listed} == RUNS_0_2
    for run_id, status in RUNS_0_2.items():
        verified = cli(workspace, "replay", run_id, "--verify")
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["status"] == status
        shown = json.loads(cli(workspace, "show", run_id, "--json").stdout)
        assert shown["status"] == status
    retried = json.loads(cli(workspace, "show", "run_2533bf572da091b6", "--json").stdout)
    last = retried["steps"][-1]
    assert (last["instance_id"], last["status"]) == ("write_scene#2", "done")
    issues = {
        i["issue_id"]: i["status"] for i in json.loads(cli(workspace, "issues", "--json").stdout)
    }
    assert issues == {
        "iss_4c95612e193b97fcea8a5e0b": "open",
        "iss_5ff09be095ca39c6aa4211d3": "closed",
        "iss_83097d5f826764f9e44736d7": "open",
    }
    plans = cli(workspace, "plan", "list")
    assert "plan_6fd57ba08cd2de28" in plans.stdout and "failed" in plans.stdout
    rounds = cli(workspace, "conference", "--list")
    assert "conf_4eeed904a589f120" in rounds.stdout and "closed" in rounds.stdout


def test_a_run_killed_under_release_0_2_resumes_to_the_end(workspace: Path) -> None:
    shutil.copy(RELEASE_0_2 / "events.sqlite", workspace / "legacy.sqlite")
    resumed = cli(workspace, "resume", "run_c4cb57594073ed4b", "-q")
    assert resumed.returncode in (0, 1), resumed.stderr
    shown = json.loads(cli(workspace, "show", "run_c4cb57594073ed4b", "--json").stdout)
    assert shown["status"] in ("done", "failed") and shown["dod"]
    assert cli(workspace, "replay", "run_c4cb57594073ed4b", "--verify").returncode == 0


def test_runs_started_before_origins_were_recorded_read_as_a_users(tmp_path: Path) -> None:
    from controlroom.domain.run import Run
    from controlroom.eventstore.store import EventStore

    shutil.copy(RELEASE_0_2 / "events.sqlite", tmp_path / "legacy.sqlite")
    store = EventStore.for_workspace(tmp_path, f"sqlite:///{tmp_path / 'legacy.sqlite'}")
    try:
        run = store.load(Run, "run_412820b39362eeaa")
        assert run is not None and run.origin.kind == "user" and run.origin.via is None
    finally:
        store.close()
