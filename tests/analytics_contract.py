"""What the DuckDB analytics projection must do over every event store backend, written once.

A backend's class sets `store_spec` (the `CONTROLROOM_STORE` value naming it). Every test gets
a fresh copy of the example workspace and a store holding many runs of every recipe: done,
failed by their DoD, failed by a model, cancelled, interrupted and resumed, and retried.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controlroom.domain.errors import ModelCallError, ModelError, StoreUnavailableError
from controlroom.domain.events import parse_topic
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from controlroom.models.agents import AgentDirectory
from controlroom.projections import analytics_batches
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_sql import TABLE_NAMES
from controlroom.projections.views import Views
from tests.conftest import EXAMPLE
from tests.fakes import RecordingModel

TASKS = (
    "Draft scene 4",
    "consistency check",
    "prose review",
    "foreshadowing audit",
    "validate scene",
    "canon update",
    "outline restructure",
)


def context(workspace: Path, store: EventStore, model: RecordingModel | None = None) -> Context:
    agents = AgentDirectory(clients={"offline": model or RecordingModel()})
    return Context.open(workspace, store=store, agents=agents)


def undrafted(workspace: Path, task: str) -> RunRequest:
    """The run of `task`; a draft's scene removed first, so the draft runs in full (a scene
    already written fails in phase A, before any model call)."""
    if task.startswith("Draft scene 4"):
        for written in (workspace / "Story" / "Scenes").glob("SCN-04*"):
            written.unlink()
    return RunRequest(task, {})


def record_history(workspace: Path, store: EventStore, rounds: int = 2) -> dict[str, str]:
    """Runs of every recipe and every ending; returns the special runs' ids by name."""
    service = RunService(context(workspace, store))
    for _ in range(rounds):
        for task in TASKS:
            asyncio.run(service.execute(service.start(undrafted(workspace, task))))
    special: dict[str, str] = {}

    broken = RunService(context(workspace, store, RecordingModel(2, ModelError("fell over"))))
    special["model_failed"] = asyncio.run(
        broken.execute(broken.start(undrafted(workspace, "Draft scene 4")))
    ).id

    slow = RecordingModel(1, ModelCallError("rate_limited", "slow down", 429))
    retrying = RunService(context(workspace, store, slow))
    special["retried"] = asyncio.run(
        retrying.execute(retrying.start(undrafted(workspace, "Draft scene 4")))
    ).id

    run = service.start(RunRequest("prose review", {}))
    service.cancel(run.id, "changed my mind")
    special["cancelled"] = asyncio.run(service.execute(run)).id

    crashing = RunService(context(workspace, store, RecordingModel(3, KeyboardInterrupt())))
    run = crashing.start(undrafted(workspace, "Draft scene 4"))
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(crashing.execute(run))
    special["resumed"] = asyncio.run(service.resume(run.id)).id
    Followers(store).catch_up()  # the DoD-issue policy opens its issues
    return special


def failing_call(real: Callable[..., Any], nth: int, error: Exception) -> Callable[..., Any]:
    """`real`, except that its `nth` call raises `error` instead."""
    calls = 0

    def call(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == nth:
            raise error
        return real(*args)

    return call


def dump(analytics: AnalyticsProjection) -> dict[str, list[list[Any]]]:
    """Every row of every table, ordered: for comparing a rebuild with incremental loads."""
    return {
        table: sorted(analytics.query(f"SELECT * FROM {table}").rows, key=repr)
        for table in TABLE_NAMES
    }


class AnalyticsContract:
    store_spec: ClassVar[str]

    @pytest.fixture
    def workspace(self, tmp_path: Path) -> Path:
        workspace = tmp_path / "novel"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".control-room"))
        return workspace

    @pytest.fixture
    def store(self, workspace: Path) -> Iterator[EventStore]:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        store = EventStore(env=store_env(workspace, self.store_spec))
        yield store
        store.close()

    @pytest.fixture
    def analytics(self, store: EventStore, tmp_path: Path) -> Iterator[AnalyticsProjection]:
        with AnalyticsProjection(store, tmp_path / "analytics.duckdb") as projection:
            yield projection

    def test_analytics_agree_with_the_event_log_and_the_run_views(
        self, workspace: Path, store: EventStore, analytics: AnalyticsProjection
    ) -> None:
        special = record_history(workspace, store)
        # Positions may skip numbers (a PostgreSQL sequence does): count the records.
        notes = store.recorder.select_notifications(start=0, limit=1_000_000)
        assert analytics.catch_up(batch_size=50) == len(notes)
        assert analytics.catch_up() == 0

        by_type = Counter(parse_topic(n.topic)[0] for n in notes)
        counted = analytics.query("SELECT event_type, count(*) FROM events GROUP BY ALL")
        assert dict(map(tuple, counted.rows)) == by_type  # type: ignore[arg-type]
        positions = analytics.query("SELECT count(DISTINCT position), max(position) FROM events")
        assert positions.rows == [[len(notes), store.max_position()]]
        for table, event_type in [
            ("agent_calls", "AgentResponded"),
            ("model_attempts", "ModelAttemptFailed"),
            ("receipts", "ReceiptIssued"),
            ("dod_results", "DodChecked"),
        ]:
            rows = analytics.query(f"SELECT count(*) FROM {table}").rows
            assert rows == [[by_type[event_type]]], table

        views = Views(store, None)
        try:
            views.catch_up()
            expected_runs = {
                r.run_id: (r.recipe_id, r.status, r.description) for r in views.query.runs()
            }
            runs = analytics.query("SELECT run_id, recipe_id, status, task FROM runs").rows
            assert {r[0]: tuple(r[1:]) for r in runs} == expected_runs
            assert len(expected_runs) == 2 * len(TASKS) + 4
            for run_id in expected_runs:
                expected_steps = sorted(
                    (s.instance_id, s.step_id, s.kind, s.status) for s in views.query.steps(run_id)
                )
                steps = analytics.query(
                    "SELECT instance_id, step_id, kind, status FROM steps "
                    f"WHERE run_id = '{run_id}'"
                ).rows
                assert sorted(map(tuple, steps)) == expected_steps, run_id
            expected_issues = sorted((i.issue_id, i.status, i.run_id) for i in views.query.issues())
            issues = analytics.query("SELECT issue_id, status, run_id FROM issues").rows
            assert sorted(map(tuple, issues)) == expected_issues
            assert expected_issues
            counts = analytics.query("SELECT run_id, issue_count FROM runs").rows
            for run_id, count in counts:
                assert count == len(views.query.issues(run_id=run_id))
        finally:
            views.close()

        retried = analytics.query(
            "SELECT step_id, attempts FROM steps WHERE attempts > 1 "
            f"AND run_id = '{special['retried']}'"
        ).rows
        assert retried == [["brief", 2]]
        resumed = analytics.query(
            f"SELECT status, resumes FROM runs WHERE run_id = '{special['resumed']}'"
        ).rows
        assert resumed == [["done", 1]], (
            resumed,
            analytics.query(f"SELECT error FROM runs WHERE run_id = '{special['resumed']}'").rows,
        )
        ended = analytics.query(
            "SELECT run_id, status FROM runs WHERE run_id IN "
            f"('{special['cancelled']}', '{special['model_failed']}')"
        ).rows
        assert dict(map(tuple, ended)) == {  # type: ignore[arg-type]
            special["cancelled"]: "cancelled",
            special["model_failed"]: "failed",
        }

    def test_a_rebuild_equals_loading_in_small_batches_as_the_log_grows(
        self, workspace: Path, store: EventStore, analytics: AnalyticsProjection
    ) -> None:
        record_history(workspace, store, rounds=1)
        analytics.catch_up(batch_size=7)
        service = RunService(context(workspace, store))
        asyncio.run(service.execute(service.start(RunRequest("consistency check", {}))))
        Followers(store).catch_up()
        analytics.catch_up(batch_size=13)
        live = dump(analytics)
        assert analytics.rebuild() == len(store.recorder.select_notifications(0, 1_000_000))
        assert dump(analytics) == live
        status = analytics.status()
        assert (status.position, status.lag) == (store.max_position(), 0)

    def test_a_failing_read_or_load_stops_at_the_last_whole_batch_and_leaves_no_reader(
        self,
        workspace: Path,
        store: EventStore,
        analytics: AnalyticsProjection,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The log is read on a thread of its own, ahead of the loader: a read that fails
        is raised to the caller, a load that fails stops the reader, and either way the
        file holds whole batches only and the next catch-up goes on from there."""
        record_history(workspace, store, rounds=1)
        # Positions may skip numbers (a PostgreSQL sequence does): batches end at records.
        positions = [n.id for n in store.recorder.select_notifications(start=0, limit=1_000_000)]
        real_read = AnalyticsProjection._read
        failing = failing_call(real_read, 3, StoreUnavailableError("the log went away"))
        monkeypatch.setattr(AnalyticsProjection, "_read", failing)
        with pytest.raises(StoreUnavailableError, match="went away"):
            analytics.catch_up(batch_size=10)
        assert analytics.status().position == positions[19]
        monkeypatch.setattr(AnalyticsProjection, "_read", real_read)

        real_load = AnalyticsProjection._load
        monkeypatch.setattr(
            AnalyticsProjection, "_load", failing_call(real_load, 2, RuntimeError("disk full"))
        )
        with pytest.raises(RuntimeError, match="disk full"):
            analytics.catch_up(batch_size=10)
        assert analytics.status().position == positions[29]
        assert not [t for t in threading.enumerate() if t.name == "analytics-read"]
        monkeypatch.setattr(AnalyticsProjection, "_load", real_load)

        assert analytics.catch_up(batch_size=10) == len(positions) - 30
        live = dump(analytics)
        analytics.rebuild()
        assert dump(analytics) == live

    def test_batches_stay_under_the_byte_budget_and_load_the_same(
        self,
        workspace: Path,
        store: EventStore,
        analytics: AnalyticsProjection,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Large records make smaller batches (a batch is held in memory whole): with a
        budget of 30 kB the log loads in many batches, none over it, to the same result."""
        record_history(workspace, store, rounds=1)
        analytics.rebuild()
        whole = dump(analytics)
        monkeypatch.setattr(analytics_batches, "BATCH_BYTES", 30_000)
        monkeypatch.setattr(analytics_batches, "PROBE", 5)
        real_load = AnalyticsProjection._load
        batch_bytes: list[int] = []

        def measured_load(self: AnalyticsProjection, con: Any, batch: Any, *rest: Any) -> None:
            batch_bytes.append(batch.state_bytes)
            real_load(self, con, batch, *rest)

        monkeypatch.setattr(AnalyticsProjection, "_load", measured_load)
        analytics.rebuild()
        assert dump(analytics) == whole
        assert len(batch_bytes) > 10, batch_bytes
        largest_record = max(len(n.state) for n in store.recorder.select_notifications(0, 10**6))
        # Each batch is sized from the records read before it: it may overshoot the budget
        # by what its own records exceed their forerunners' mean, never by more than that.
        assert max(batch_bytes) <= 30_000 + largest_record * 5, (batch_bytes, largest_record)
