"""What the named projections must do over every event store backend, written once.

A backend's test class sets `store_spec` (the `CONTROLROOM_STORE` value naming it) and
whether it is `durable`, as in `tests/store_contract.py`; a PostgreSQL class joins the same
way. Every test gets a fresh copy of the example workspace and an empty store.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pytest

from controlroom.domain.issue import Issue
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from controlroom.projections.views import Views
from tests.conftest import EXAMPLE

AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)


class ProjectionsContract:
    #: The `CONTROLROOM_STORE` value naming the backend under test.
    store_spec: ClassVar[str]
    #: Whether events outlive the store object (a file or a server, not process memory).
    durable: ClassVar[bool] = True

    @pytest.fixture
    def ctx(self, tmp_path: Path) -> Iterator[Context]:
        if not self.store_spec:
            pytest.skip(f"{type(self).__name__}: no store configured")
        workspace = tmp_path / "novel"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".control-room"))
        store = self.open_store(workspace)
        context = Context.open(workspace, store=store)
        yield context
        context.close()

    @pytest.fixture
    def views(self, ctx: Context) -> Iterator[Views]:
        views = Views.for_store(ctx.store)
        yield views
        views.close()

    def open_store(self, workspace: Path) -> EventStore:
        return EventStore(env=store_env(workspace, self.store_spec))

    def record(self, ctx: Context, *tasks: str) -> list[str]:
        service = RunService(ctx)
        ids = [asyncio.run(service.execute(service.start(RunRequest(t, {})))).id for t in tasks]
        Followers(ctx.store).catch_up()  # the DoD-issue policy records its issues
        return ids

    def test_catching_up_applies_every_event_once_and_leaves_no_lag(
        self, ctx: Context, views: Views
    ) -> None:
        first, failed = self.record(ctx, "Draft scene 4", "consistency check")
        assert views.catch_up() > 0
        assert views.catch_up() == 0
        head = ctx.store.max_position()
        assert [(s.name, s.position, s.lag) for s in views.status()] == [
            ("runs", head, 0),
            ("issues", head, 0),
            ("plans", head, 0),
            ("conferences", head, 0),
            ("status", head, 0),
        ]
        assert [(r.run_id, r.status) for r in views.query.runs()] == [
            (first, "done"),
            (failed, "failed"),
        ]
        (issue,) = views.query.issues(run_id=failed)
        assert issue.kind == "dod_failure" and views.query.issue(issue.issue_id) == issue

    def test_a_rebuild_equals_catching_up_in_small_batches(
        self, ctx: Context, views: Views
    ) -> None:
        self.record(ctx, "Draft scene 4", "consistency check")
        views.catch_up(batch_size=3)
        self.record(ctx, "foreshadowing audit")
        views.catch_up(batch_size=4)
        live = views.dump()
        views.rebuild()
        assert views.dump() == live

    def test_rebuilding_one_projection_leaves_the_others_as_they_are(
        self, ctx: Context, views: Views
    ) -> None:
        (run_id,) = self.record(ctx, "prose review")
        views.catch_up()
        self.record(ctx, "prose review")
        views.rebuild("issues")
        positions = {s.name: s.position for s in views.status()}
        assert positions["issues"] == ctx.store.max_position() > positions["runs"]
        assert [r.run_id for r in views.query.runs()] == [run_id]

    def test_an_issue_closed_later_shows_its_resolution(self, ctx: Context, views: Views) -> None:
        issue = Issue.open(
            "iss_1",
            AT,
            kind="k",
            title="t",
            detail="d",
            run_id=None,
            session_id=None,
            recipe_id=None,
        )
        ctx.store.save(issue)
        views.catch_up()
        assert views.query.issue("iss_1").status == "open"
        issue.close(AT + timedelta(seconds=1), "fixed")
        ctx.store.save(issue)
        views.catch_up()
        closed = views.query.issue("iss_1")
        assert (closed.status, closed.resolution) == ("closed", "fixed")
        assert closed.closed_at is not None and closed.closed_at.startswith("2026-02-10T14:30:01")

    def test_a_pipelines_status_is_folded_and_rebuilt_alike(
        self, ctx: Context, views: Views
    ) -> None:
        from controlroom.domain.iteration import iteration_id
        from tests.test_status import finish_the_ladder_run, the_ladder_run

        run = the_ladder_run(ctx)
        views.catch_up(batch_size=5)
        target_id = iteration_id('tiny_pipeline {"scene":4}')
        (summary,) = views.pipelines.pipelines()
        assert (summary.target_id, summary.run_status, summary.blockers) == (
            target_id,
            "waiting",
            1,
        )
        finish_the_ladder_run(ctx, run)
        views.catch_up(batch_size=4)
        detail = views.pipelines.pipeline(target_id)
        assert detail.current is not None and detail.current.status == "partial"
        assert [(h.number, h.result, h.deferred) for h in detail.history] == [(1, "partial", 1)]
        assert views.pipelines.snapshot()[0] == detail.position == ctx.store.max_position()
        live = views.dump()
        views.rebuild("status")
        assert views.dump() == live

    def test_views_ahead_of_their_log_start_again_from_it(
        self, ctx: Context, tmp_path: Path
    ) -> None:
        if not self.durable:
            pytest.skip("the views of an in-memory store live and die with it")
        self.record(ctx, "prose review", "prose review")
        path = Path(ctx.store.env["SQLITE_DBNAME"]).with_name("views.sqlite")
        with Views(ctx.store, path) as views:
            views.catch_up()
        (tmp_path / "other").mkdir()
        other = self.open_store(tmp_path / "other")
        try:
            with Views(other, path) as views:  # the same views file, a shorter log
                assert views.catch_up() == 0
                assert views.query.runs() == []
                assert [s.position for s in views.status()] == [0] * len(views.names())
        finally:
            other.close()
