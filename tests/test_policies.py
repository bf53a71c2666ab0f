"""Reactions as tracked policies: a crash between a run's last commit and its reaction
loses nothing, and no reaction is recorded twice."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.events import DomainEvent
from controlroom.domain.issue import IssueOpened
from controlroom.engine.context import Context
from tests.test_cli_e2e import cli as run_cli

pytestmark = pytest.mark.e2e
CLI = str(Path(sys.executable).parent / "controlroom")
#: The consistency check's commits: its start, then one per step (the DoD rides on the last),
#: the intents of its two report files (its own and the latest copy), each committed before
#: the file is written, and on a new store the texts stored apart (domain/texts.py), each
#: before the step that refers to them: its two long tool outputs, and the prompts of each
#: of its two agent steps (system and user text in one commit).
CONSISTENCY_COMMITS = 15  # start, 8 steps (2 review gates), 2 file intents, 4 of texts


def cli(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-w", str(workspace), env=env)


def issues_opened(workspace: Path) -> list[IssueOpened]:
    ctx = Context.open(workspace)
    try:
        return [p.event for p in ctx.store.read_log() if isinstance(p.event, IssueOpened)]
    finally:
        ctx.close()


def test_a_process_killed_between_the_final_commit_and_the_issue_keeps_the_issue(
    workspace: Path,
) -> None:
    killed = cli(
        workspace,
        "run",
        "check consistency of the scenes",
        "-q",
        CONTROLROOM_CRASH_AFTER_COMMIT=str(CONSISTENCY_COMMITS),
    )
    assert killed.returncode == -9, killed.stderr  # SIGKILL right after the run's last commit
    assert issues_opened(workspace) == []  # the run failed its DoD; nobody reacted yet

    # Reads are reads: listing issues runs no policy and records nothing.
    assert json.loads(cli(workspace, "issues", "--json").stdout) == []
    assert issues_opened(workspace) == []
    # The next command that writes (here `resume`, the recovery command) catches up: the
    # policy opens the issue, once.
    assert cli(workspace, "resume", "-q").returncode == 0  # nothing left to resume
    listed = json.loads(cli(workspace, "issues", "--json").stdout)
    assert len(listed) == 1 and listed[0]["kind"] == "dod_failure"
    assert cli(workspace, "resume", "-q").returncode == 0
    assert len(json.loads(cli(workspace, "issues", "--json").stdout)) == 1
    assert len(issues_opened(workspace)) == 1
    runs = json.loads(cli(workspace, "runs", "--json").stdout)
    assert [r["status"] for r in runs] == ["failed"]


def test_the_issue_is_dated_by_the_check_that_failed_not_by_whoever_reacted(
    workspace: Path,
) -> None:
    cli(workspace, "run", "check consistency of the scenes", "-q")
    (issue,) = issues_opened(workspace)
    ctx = Context.open(workspace)
    try:
        checked = [
            p.event
            for p in ctx.store.read_log()
            if type(p.event).__name__ == "DodChecked" and not p.event.passed  # type: ignore[attr-defined]
        ]
    finally:
        ctx.close()
    assert [issue.timestamp] == [e.timestamp for e in checked]


def test_two_catch_up_loops_racing_open_each_issue_exactly_once(workspace: Path) -> None:
    import asyncio
    import threading

    from controlroom.engine.followers import Followers
    from controlroom.engine.service import RunRequest, RunService
    from controlroom.eventstore.store import EventStore

    ctx = Context.open(workspace)
    service = RunService(ctx)
    for _ in range(6):
        asyncio.run(service.execute(service.start(RunRequest("consistency check", {}))))
    ctx.close()

    stores = [EventStore.for_workspace(workspace) for _ in range(2)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def race(store: EventStore) -> None:
        try:
            barrier.wait()
            Followers(store).catch_up()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for store in stores:
        store.close()
    assert errors == []
    # Six runs found the same thing: one issue, opened once, linked to each later run once.
    opened = issues_opened(workspace)
    assert len(opened) == 1
    ctx = Context.open(workspace)
    try:
        linked = [
            p.event.run_id  # type: ignore[attr-defined]
            for p in ctx.store.read_log()
            if type(p.event).__name__ == "IssueRecurred"
        ]
    finally:
        ctx.close()
    assert len(linked) == 5 == len(set(linked))


def test_reads_over_http_record_nothing_and_wait_for_the_policies(workspace: Path) -> None:
    """A GET never runs a policy: with the catch-up loop stopped, reading leaves the log as
    it was (the issue the run calls for stays unopened); the loop opens it, and a GET
    made after the run's end then finds it (it waits for the loop to pass the log's head)."""
    import httpx

    from tests.live import live_server

    killed = cli(
        workspace,
        "run",
        "check consistency of the scenes",
        "-q",
        CONTROLROOM_CRASH_AFTER_COMMIT=str(CONSISTENCY_COMMITS),
    )
    assert killed.returncode == -9, killed.stderr
    from controlroom.api.server import Server

    ctx = Context.open(workspace)
    try:
        server = Server(ctx, execute=False)  # its catch-up loop never started
        head = ctx.store.max_position()
        assert [r.status for r in server.read_views().query.runs()] == ["failed"]
        assert server.read_views().query.issues() == []
        assert ctx.store.max_position() == head  # nothing recorded by reading
        server.views.close()
        server.analytics.close()
    finally:
        ctx.close()
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        listed = client.get("/api/issues").json()
    assert [i["kind"] for i in listed] == ["dod_failure"]


class _Noted(DomainEvent):
    """An event no policy follows."""

    type_name: ClassVar[str] = "TestNoted"
    n: int


class _Notebook(Aggregate):
    def note(self, at: datetime, n: int) -> None:
        self._trigger(_Noted, at, n=n)

    def apply(self, event: DomainEvent) -> None:
        pass


def test_a_policy_that_finds_nothing_moves_to_the_head_and_does_not_read_it_again(
    tmp_path: Path,
) -> None:
    """Reads cost what is new, not the whole history: a long stretch of events no policy
    follows is read once, and the positions move past it."""
    from controlroom.engine.policies import SKIP_AHEAD, PolicyRunner, bundled_policies
    from controlroom.eventstore.store import EventStore

    store = EventStore.for_workspace(tmp_path, f"sqlite:///{tmp_path / 'events.sqlite'}")
    try:
        at = datetime(2026, 11, 26, tzinfo=UTC)
        book = _Notebook("book_1")
        for n in range(SKIP_AHEAD + 100):
            book.note(at, n)
        store.save(book)
        runner = PolicyRunner(store, bundled_policies())
        assert runner.catch_up() == 0
        head = store.max_position()
        assert {position for _, position in runner.status()} == {head}
        reads: list[int] = []
        select = store.recorder.select_notifications

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = select(*args, **kwargs)
            reads.append(len(found))
            return found

        store.recorder.select_notifications = counted  # type: ignore[method-assign]
        assert runner.catch_up() == 0
        assert reads == []  # at the head: nothing read at all
    finally:
        store.close()
