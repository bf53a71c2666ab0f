"""The SSE feeds: open at once, refuse filters that cannot match, read finished runs from
their own streams, and catch subscribers up from the store page by page."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from controlroom.api.history import PAGE
from controlroom.api.hub import Delivery, EventHub
from controlroom.api.notify import LogNotifier
from controlroom.domain.issue import Issue
from controlroom.engine.context import Context
from controlroom.engine.service import RunService
from controlroom.eventstore.store import EventStore
from tests.live import live_server, read_sse
from tests.test_cli_e2e import as_json, cli

AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)


def test_a_quiet_feed_answers_at_once_long_before_its_first_ping(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        started = time.monotonic()
        with client.stream("GET", "/api/events") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            first = next(response.iter_raw())
        assert time.monotonic() - started < 5  # the first ping comes after 15 s
        assert first.startswith(b": stream open\r\nretry: ")


@pytest.mark.e2e
def test_a_feed_filtered_by_an_unknown_event_type_is_refused_naming_it(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        refused = client.get("/api/events", params={"type": "RunStarted,Bogus,Nope"})
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "unknown_event_type" and error["field"] == "type"
        assert error["message"].startswith("unknown event type(s): Bogus, Nope; known types:")
        assert "RunStarted" in error["message"] and "partial" in error["message"]
        with client.stream("GET", "/api/events?type=RunStarted,partial") as accepted:
            assert accepted.status_code == 200


@pytest.mark.e2e
def test_a_finished_run_feed_reads_only_that_run_with_global_positions(workspace: Path) -> None:
    ws = str(workspace)
    earlier = as_json(cli("run", "structural_outline", "-w", ws, "-q", "--json"))["run_id"]
    run_id = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]
    assert cli("runs", "-w", ws).returncode == 0  # the read models are caught up
    db = workspace / ".control-room" / "events.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:
        positions = [
            row[0]
            for row in conn.execute(
                "SELECT rowid FROM stored_events WHERE originator_id = ? "
                "ORDER BY originator_version",
                (run_id,),
            )
        ]
        # Damage the earlier run: a feed that scanned the global log would trip over it.
        conn.execute(
            "UPDATE stored_events SET state = X'7B' WHERE originator_id = ? "
            "AND originator_version = 2",
            (earlier,),
        )
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        feed = read_sse(client, f"/api/runs/{run_id}/events")
        assert [int(m["id"]) for m in feed] == positions
        assert feed[-1]["event"] == "RunCompleted"
        assert {m["data"]["run_id"] for m in feed} == {run_id}
        middle = positions[len(positions) // 2]
        rest = read_sse(
            client, f"/api/runs/{run_id}/events", headers={"Last-Event-ID": str(middle)}
        )
        assert [int(m["id"]) for m in rest] == [p for p in positions if p > middle]


def issue(issue_id: str) -> Issue:
    return Issue.open(
        issue_id,
        AT,
        kind="k",
        title="t",
        detail="d",
        run_id=None,
        session_id=None,
        recipe_id=None,
    )


async def first_deliveries(hub: EventHub, after: int, count: int) -> list[Delivery]:
    received: list[Delivery] = []
    feed: AsyncIterator[Delivery] = hub.deliveries(after)
    async with asyncio.timeout(20):
        async for delivery in feed:
            received.append(delivery)
            if len(received) == count:
                break
    return received


def test_a_subscriber_behind_the_window_gets_every_event_once_in_order_across_pages(
    tmp_path: Path,
) -> None:
    store = EventStore.for_workspace(tmp_path)
    for n in range(PAGE * 2 + 7):
        store.save(issue(f"iss_{n}"))

    async def scenario() -> list[int]:
        hub = EventHub(store, LogNotifier())  # the window starts at the log's end
        hub.start()
        try:
            store.save(issue("iss_live"))
            hub.notifier.notify()
            received = await first_deliveries(hub, 3, store.max_position() - 3)
        finally:
            await hub.stop()
        return [d.item.position for d in received if d.item is not None]

    assert asyncio.run(scenario()) == list(range(4, PAGE * 2 + 9))
    store.close()


def test_a_hole_in_the_log_does_not_stall_a_subscriber_catching_up(tmp_path: Path) -> None:
    store = EventStore.for_workspace(tmp_path)
    for n in range(9):
        store.save(issue(f"iss_{n}"))

    async def scenario() -> list[int]:
        hub = EventHub(store, LogNotifier())
        hub.start()
        try:
            store.save(issue("iss_9"))  # position 10, the first in the window
            hub.notifier.notify()
            async with asyncio.timeout(10):
                while not hub.window:
                    await asyncio.sleep(0.01)
            # An event deleted by hand, right before the window: positions skip 9.
            db = tmp_path / ".control-room" / "events.sqlite"
            with closing(sqlite3.connect(db)) as conn, conn:
                conn.execute("DELETE FROM stored_events WHERE rowid = 9")
            received = await first_deliveries(hub, 0, 9)
        finally:
            await hub.stop()
        return [d.item.position for d in received if d.item is not None]

    assert asyncio.run(scenario()) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    store.close()


@pytest.mark.e2e
def test_a_retried_run_feed_read_from_its_start_goes_on_past_its_first_ending(
    workspace: Path,
) -> None:
    ws = str(workspace)
    run_id = as_json(cli("run", "analytical_consistency", "-w", ws, "-q", "--json"))["run_id"]
    ctx = Context.open(workspace)
    try:
        # Reopened and claimed by a worker elsewhere (the server leaves it be): not ended.
        RunService(ctx).retry(run_id, "review", owner="worker-host:4242")
        types = [type(e).__name__ for e in ctx.store.stream(run_id)]
    finally:
        ctx.close()
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        feed = read_sse(client, f"/api/runs/{run_id}/events", limit=len(types))
    assert "RunFailed" in types and types[-1] != "RunFailed"
    assert [m["event"] for m in feed] == types
