"""Analytics within bounds: DuckDB's memory, threads and spill space, the answer's size, a
time limit that counts every wait and really stops the query, threads of its own, and a
bounded wait for them (issue 24, items 5 and 6)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import duckdb
import httpx
import pytest

from controlroom.api.app import create_app
from controlroom.engine.context import Context
from controlroom.engine.settings import Settings, SettingsError
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_limits import AnalyticsResources
from controlroom.projections.analytics_pool import AnalyticsBusyError
from controlroom.projections.analytics_query import AnalyticsQueryError, QueryLimits, QueryTicket

#: Runs for many minutes and returns nothing: a cross join whose filter never holds.
ENDLESS = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range < 0"
#: Generous (two test workers share two cores): the point is minutes against seconds.
MARGIN_S = 30.0
CLI = str(Path(sys.executable).parent / "controlroom")


@pytest.fixture
def store() -> Iterator[EventStore]:
    store = EventStore(store_env(Path("unused"), "memory"))
    yield store
    store.close()


def projection(
    store: EventStore, tmp_path: Path, resources: AnalyticsResources | None = None
) -> AnalyticsProjection:
    return AnalyticsProjection(store, tmp_path / "analytics.duckdb", resources)


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + MARGIN_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.02)


def duckdb_reads(setting: str, value: str) -> str:
    """How DuckDB shows `value` for `setting` (it reports sizes in its own units)."""
    con = duckdb.connect(config={setting: value})
    try:
        return str(con.execute(f"SELECT current_setting('{setting}')").fetchall()[0][0])
    finally:
        con.close()


# -- DuckDB's settings ------------------------------------------------------------------------


def test_a_query_opens_with_the_configured_memory_threads_and_spill_space(
    store: EventStore, tmp_path: Path
) -> None:
    limits = AnalyticsResources(memory_limit="300MB", threads=1, temp_limit="700MB")
    with projection(store, tmp_path, limits) as a:
        a.catch_up()
        row = a.query(
            "SELECT current_setting('memory_limit'), current_setting('threads'), "
            "current_setting('max_temp_directory_size'), current_setting('temp_directory')"
        ).rows[0]
    assert row == [
        duckdb_reads("memory_limit", "300MB"),
        1,
        duckdb_reads("max_temp_directory_size", "700MB"),
        f"{tmp_path / 'analytics.duckdb'}.tmp",
    ]


def test_without_settings_a_query_gets_a_gigabyte_and_two_threads_not_duckdbs_defaults(
    store: EventStore, tmp_path: Path
) -> None:
    with projection(store, tmp_path) as analytics:
        row = analytics.query(
            "SELECT current_setting('memory_limit'), current_setting('threads'), "
            "current_setting('max_temp_directory_size')"
        ).rows[0]
    assert row == [
        duckdb_reads("memory_limit", "1GB"),
        2,
        duckdb_reads("max_temp_directory_size", "2GB"),
    ]


def test_the_limits_are_read_from_the_environment_once_and_a_bad_one_is_named() -> None:
    settings = Settings.from_env(
        {
            "CONTROLROOM_ANALYTICS_MEMORY_LIMIT": "512MB",
            "CONTROLROOM_ANALYTICS_THREADS": "1",
            "CONTROLROOM_ANALYTICS_TEMP_LIMIT": "1GiB",
            "CONTROLROOM_ANALYTICS_MAX_RESULT_BYTES": "65536",
            "CONTROLROOM_ANALYTICS_WORKERS": "3",
            "CONTROLROOM_ANALYTICS_QUEUE": "0",
        }
    )
    assert settings.analytics == AnalyticsResources("512MB", 1, "1GiB", 65536, 3, 0)
    assert Settings.from_env({}).analytics == AnalyticsResources()
    with pytest.raises(SettingsError, match="CONTROLROOM_ANALYTICS_MEMORY_LIMIT='lots'"):
        Settings.from_env({"CONTROLROOM_ANALYTICS_MEMORY_LIMIT": "lots"})
    with pytest.raises(SettingsError, match="CONTROLROOM_ANALYTICS_WORKERS must be at least 1"):
        Settings.from_env({"CONTROLROOM_ANALYTICS_WORKERS": "0"})


def test_a_query_past_the_memory_limit_fails_naming_it_and_the_file_stays_usable(
    store: EventStore, tmp_path: Path
) -> None:
    limits = AnalyticsResources(memory_limit="64MB", temp_limit="64MB")
    with projection(store, tmp_path, limits) as analytics:
        with pytest.raises(AnalyticsQueryError) as refused:
            analytics.query("SELECT list(range) FROM range(100000000)")
        assert refused.value.code == "query_memory_limit"
        assert "64MB" in str(refused.value)
        assert "CONTROLROOM_ANALYTICS_MEMORY_LIMIT" in str(refused.value)
        assert analytics.query("SELECT 42").rows == [[42]]


# -- the answer's size ------------------------------------------------------------------------


def test_rows_past_the_size_limit_are_cut_and_the_result_says_so(
    store: EventStore, tmp_path: Path
) -> None:
    with projection(store, tmp_path, AnalyticsResources(max_result_bytes=10_000)) as analytics:
        result = analytics.query("SELECT range, repeat('x', 100) FROM range(1000)")
        assert result.truncated and 0 < result.row_count < 1000
        assert len(json.dumps(result.rows, separators=(",", ":"))) <= 10_000
        assert result.note is not None and "size limit of 9.8 KiB" in result.note
        one_huge_row = analytics.query("SELECT repeat('x', 20000)")
        assert (one_huge_row.row_count, one_huge_row.truncated) == (0, True)
        small = analytics.query("SELECT * FROM range(10)")
        assert (small.row_count, small.truncated, small.note) == (10, False, None)


# -- time limits --------------------------------------------------------------------------------


def test_a_query_past_its_time_limit_is_interrupted_and_the_file_stays_usable(
    store: EventStore, tmp_path: Path
) -> None:
    async def scenario(analytics: AnalyticsProjection) -> None:
        started = time.monotonic()
        with pytest.raises(AnalyticsQueryError) as stopped:
            await analytics.ask(ENDLESS, QueryLimits(timeout_s=1))
        assert time.monotonic() - started < MARGIN_S
        assert stopped.value.code == "query_timeout" and "1s" in str(stopped.value)
        assert (await analytics.ask("SELECT 42")).rows == [[42]]
        assert analytics.requests_in_flight == 0

    with projection(store, tmp_path) as analytics:
        asyncio.run(scenario(analytics))


def test_a_query_waiting_behind_a_long_one_is_answered_by_its_own_time_limit(
    store: EventStore, tmp_path: Path
) -> None:
    async def scenario(analytics: AnalyticsProjection) -> None:
        long = asyncio.create_task(analytics.ask(ENDLESS, QueryLimits(timeout_s=120)))
        await until(lambda: analytics.queries_running == 1, "the long query runs")
        with pytest.raises(AnalyticsQueryError) as waited:
            await analytics.ask("SELECT 1", QueryLimits(timeout_s=1))
        assert waited.value.code == "query_timeout"
        assert "did not start" in str(waited.value)
        assert not long.done()  # answered while the long one still holds the file
        analytics.close()  # the server stops: the long query is interrupted too
        with pytest.raises(AnalyticsQueryError) as cancelled:
            await asyncio.wait_for(long, MARGIN_S)
        assert cancelled.value.code == "query_cancelled"

    with projection(store, tmp_path) as analytics:
        asyncio.run(scenario(analytics))


# -- threads of its own, and a bounded wait ---------------------------------------------------


def test_too_many_queries_at_once_are_refused_at_once(store: EventStore, tmp_path: Path) -> None:
    async def scenario(analytics: AnalyticsProjection) -> None:
        slow = [
            asyncio.create_task(analytics.ask(ENDLESS, QueryLimits(timeout_s=120)))
            for _ in range(2)
        ]
        await until(lambda: analytics.requests_in_flight == 2, "two queries run or wait")
        with pytest.raises(AnalyticsBusyError, match="at most 1 run and 1 wait"):
            await analytics.ask("SELECT 1")
        analytics.close()
        for task in slow:
            with pytest.raises(AnalyticsQueryError):
                await asyncio.wait_for(task, MARGIN_S)

    with projection(store, tmp_path, AnalyticsResources(workers=1, queue=1)) as analytics:
        asyncio.run(scenario(analytics))


@asynccontextmanager
async def in_process(
    workspace: Path,
) -> AsyncIterator[tuple[httpx.AsyncClient, AnalyticsProjection]]:
    """The app on this event loop (no SSE here: every response ends)."""
    ctx = Context.open(workspace)
    app = create_app(ctx)
    analytics: AnalyticsProjection = app.state.server.analytics
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client, analytics
    finally:
        analytics.close()
        ctx.close()


def test_a_runs_thread_work_goes_on_while_analytics_queries_run(workspace: Path) -> None:
    """The event loop's default pool (where runs read and write) has one thread here: a
    query on it would hold it for the query's whole time limit."""

    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        async with in_process(workspace) as (client, analytics):
            query = {"sql": ENDLESS, "timeout_s": 120}
            slow = asyncio.create_task(client.post("/api/analytics/query", json=query))
            await until(lambda: analytics.queries_running == 1, "the query runs")
            ran = await asyncio.wait_for(asyncio.to_thread(lambda: "ran"), MARGIN_S)
            assert ran == "ran" and not slow.done()
            analytics.close()
            answer = await asyncio.wait_for(slow, MARGIN_S)
            assert answer.status_code == 400
            assert answer.json()["error"]["code"] == "query_cancelled"

    asyncio.run(scenario())


def test_http_refuses_a_request_past_the_queue_with_503_and_retry_after(workspace: Path) -> None:
    async def scenario() -> None:
        async with in_process(workspace) as (client, analytics):
            limit = analytics.resources.workers + analytics.resources.queue
            query = {"sql": ENDLESS, "timeout_s": 120}
            slow = [
                asyncio.create_task(client.post("/api/analytics/query", json=query))
                for _ in range(limit)
            ]
            await until(lambda: analytics.requests_in_flight == limit, "the queue is full")
            refused = await client.get("/api/analytics/reports/run_outcomes")
            assert refused.status_code == 503
            assert refused.headers["Retry-After"].isdigit()
            assert refused.json()["error"]["code"] == "analytics_busy"
            analytics.close()
            for answer in await asyncio.wait_for(asyncio.gather(*slow), MARGIN_S):
                assert answer.status_code == 400, answer.text

    asyncio.run(scenario())


def test_http_stops_a_query_at_its_time_limit_and_names_a_memory_limit(workspace: Path) -> None:
    async def scenario() -> None:
        async with in_process(workspace) as (client, _):
            started = time.monotonic()
            stopped = await client.post(
                "/api/analytics/query", json={"sql": ENDLESS, "timeout_s": 1}
            )
            assert time.monotonic() - started < MARGIN_S
            assert stopped.status_code == 400
            assert stopped.json()["error"]["code"] == "query_timeout"
            # 150 million integers in one list need 1.2 GB; the default limit is 1GB.
            big = "SELECT len(l) FROM (SELECT list(range) AS l FROM range(150000000))"
            refused = await client.post("/api/analytics/query", json={"sql": big})
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"]["code"] == "query_memory_limit"
            assert "1GB" in refused.json()["error"]["message"]
            fine = await client.post("/api/analytics/query", json={"sql": "SELECT 1"})
            assert fine.status_code == 200 and fine.json()["rows"] == [[1]]

    asyncio.run(scenario())


@pytest.mark.e2e
def test_the_cli_takes_its_limits_from_the_environment(workspace: Path) -> None:
    def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "analytics", *args, "-w", str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )

    limited = cli(
        "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t",
        "--json",
        CONTROLROOM_ANALYTICS_MEMORY_LIMIT="300MB",
        CONTROLROOM_ANALYTICS_THREADS="1",
    )
    assert limited.returncode == 0, limited.stderr
    assert json.loads(limited.stdout)["rows"] == [[duckdb_reads("memory_limit", "300MB"), 1]]
    cut = cli(
        "SELECT repeat('x', 1000) FROM range(100)", CONTROLROOM_ANALYTICS_MAX_RESULT_BYTES="4096"
    )
    assert cut.returncode == 0 and "size limit of 4 KiB" in cut.stderr
    stopped = cli(ENDLESS, "--timeout", "1")
    assert stopped.returncode == 64 and "time limit of 1s" in stopped.stderr
    bad = cli("SELECT 1", CONTROLROOM_ANALYTICS_TEMP_LIMIT="much")
    assert bad.returncode != 0 and "CONTROLROOM_ANALYTICS_TEMP_LIMIT='much'" in bad.stderr


def test_a_stop_that_comes_as_the_query_starts_is_not_lost() -> None:
    """DuckDB forgets an interrupt that arrives before its query executes; the ticket counts
    as started a moment earlier, so a stop then (a server closing) must still end it."""
    con = duckdb.connect()
    ticket = QueryTicket(timeout_s=600)
    # About a minute's work if nothing stops it (DuckDB's loop does not yield to the test's
    # timeout, so not an endless query): before, it ran to its end and this failed.
    minute = "SELECT count(*) FROM range(150000) a, range(150000) b WHERE a.range + b.range < 0"
    with pytest.raises(duckdb.InterruptException), ticket.running(con):
        ticket.cancel()  # before the query below begins
        con.execute(minute).fetchall()
    assert ticket.timed_out().code == "query_cancelled"
