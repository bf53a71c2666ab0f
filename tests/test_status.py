"""The status of pipelines (seed 002's STATUS.md) as a projection, and its export to
`control-room-reports/STATUS.md` through the write-file step's guarantees: once per change,
never over someone else's edit, never through a link, resolved by hash after a crash."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.events import DomainEvent
from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.issue import IssueClosed, IssueOpened
from controlroom.domain.iteration import Iteration, iteration_id
from controlroom.domain.run_events import (
    HumanAnswered,
    RunCompleted,
    RunStarted,
    StepCompleted,
    StepFailed,
    StepStarted,
    StepWaiting,
    TaskSpec,
)
from controlroom.domain.status_report import (
    STATUS_PATH,
    StatusExported,
    StatusExportFailed,
    StatusExportIntended,
    StatusReport,
    status_report_id,
)
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.status_export import STALE_INTENT_S, StatusExporter
from controlroom.projections.status_markdown import render_status
from controlroom.projections.status_queries import PipelineNotFoundError
from controlroom.projections.views import Views
from tests.conftest import REPO, write_override

AT = datetime(2026, 2, 10, 14, 30, tzinfo=UTC)
PIPELINE = "draft_pipeline"


def pipeline_recipe(recipe_id: str = PIPELINE) -> str:
    """`creative_draft_scene` as a pipeline: each scene number is a target of its own."""
    recipe = json.loads((REPO / "recipes" / "creative_draft_scene.json").read_text())
    # Each iteration drafts the scene again: nothing written to the manuscript, no DoD on it.
    recipe["phase_b"] = [s for s in recipe["phase_b"] if s.get("kind") != "write_file"]
    recipe["dod"] = [d for d in recipe.get("dod", []) if d["check"] != "file_exists"]
    recipe.update(
        recipe_id=recipe_id,
        label="Draft a scene, iteration by iteration",
        task_patterns=["draft pipeline"],
        iteration={"key_args": ["scene_number"]},
    )
    return json.dumps(recipe)


@pytest.fixture
def pipeline_ctx(workspace: Path) -> Iterator[Context]:
    write_override(workspace, f"{PIPELINE}.json", pipeline_recipe())
    context = Context.open(workspace)
    yield context
    context.close()


@pytest.fixture
def views(pipeline_ctx: Context) -> Iterator[Views]:
    with Views.for_store(pipeline_ctx.store, pipeline_ctx.workspace.root) as found:
        yield found


def run_pipeline(ctx: Context, scene: int = 4) -> str:
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest(PIPELINE, {"scene_number": scene}))))
    return run.id


def status_file(ctx: Context) -> Path:
    return ctx.workspace.root / STATUS_PATH


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def report_events(ctx: Context) -> list[DomainEvent]:
    return [
        r
        for r in ctx.store.stream_records(status_report_id(STATUS_PATH))
        if isinstance(r, DomainEvent)
    ]


class Later:
    """A clock past any intent's staleness: what a process sees after a crash."""

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=STALE_INTENT_S + 1)


# -- the projection, from events made by hand ----------------------------------------------------


class Stream(Aggregate):
    """Records whatever events it is given (a run's, as the engine would write them)."""

    def apply(self, event: DomainEvent) -> None:
        pass

    def add(self, cls: type[DomainEvent], at: datetime, **fields: Any) -> None:
        self._trigger(cls, at, **fields)


RECIPE = {
    "recipe_id": "tiny_pipeline",
    "iteration": {"key_args": ["scene"], "gap_slot": "gap"},
    "phase_a": [{"step_id": "find", "tool": "file_locator", "output_slot": "found"}],
    "phase_b": [
        {"step_id": "draft", "agent_archetype": "writer", "output_slot": "text"},
        {"step_id": "polish", "agent_archetype": "editor", "output_slot": "better"},
        {"step_id": "gap", "agent_archetype": "planner", "output_slot": "gap"},
    ],
}


def started(stream: Stream, at: datetime, scene: int = 4) -> None:
    stream.add(
        RunStarted,
        at,
        recipe_id="tiny_pipeline",
        recipe=RECIPE,
        fingerprint="f" * 64,
        task=TaskSpec(description="tiny", args={"scene": scene}),
        routing=None,
        session_id="s",
        trace_id="t",
        total_steps=4,
    )


def step(stream: Stream, at: datetime, index: int, step_id: str, instance: str) -> None:
    stream.add(
        StepStarted,
        at,
        step_index=index,
        step_id=step_id,
        instance_id=instance,
        kind="agent",
        phase="b",
        output_slot="x",
    )


def completed(stream: Stream, at: datetime, index: int, step_id: str, instance: str) -> None:
    stream.add(
        StepCompleted,
        at,
        step_index=index,
        step_id=step_id,
        instance_id=instance,
        output_slot="x",
        output_hash="h",
        output_preview="p",
        input_slot_refs=[],
    )


def failed(stream: Stream, at: datetime, index: int, step_id: str, instance: str) -> None:
    stream.add(
        StepFailed,
        at,
        step_index=index,
        step_id=step_id,
        instance_id=instance,
        error_type="ModelUnavailableError",
        error="HTTP 500 from flaky-1",
    )


def decided(stream: Stream, at: datetime, after: str, reason: str, **rung: Any) -> None:
    stream.add(
        FlowDecided,
        at,
        flow="linear",
        after_instance=after,
        candidates=[],
        choice="x",
        reason=reason,
        rung=rung,
        context_sha256="c" * 64,
    )


def the_ladder_run(ctx: Context, run_id: str = "run_tiny") -> Stream:
    """A run whose `draft` climbs to a person and waits (saved up to the wait)."""
    run = Stream(run_id)
    t = AT
    started(run, t)
    step(run, t, 0, "find", "find")
    completed(run, t, 0, "find", "find")
    step(run, t, 1, "draft", "draft")
    failed(run, t, 1, "draft", "draft")
    decided(
        run,
        t,
        "draft",
        "escalate flaky-1 -> flaky-2",
        kind="escalate",
        subject="draft",
        from_model="offline:flaky-1",
        to_model="offline:flaky-2",
        n=1,
    )
    step(run, t, 1, "draft", "draft#2")
    failed(run, t, 1, "draft", "draft#2")
    decided(run, t, "draft#2", "consult two models", kind="consult", subject="draft")
    step(run, t, 1, "draft", "draft#3")
    failed(run, t, 1, "draft", "draft#3")
    decided(run, t, "draft#3", "the author decides", kind="human", subject="draft", owner="me")
    step(run, t, 1, "draft", "draft#4")
    run.add(
        StepWaiting,
        t + timedelta(seconds=1),
        instance_id="draft#4",
        step_id="draft",
        reason="still fails after its ladder",
        awaiting={"kind": "person", "owner": "me", "issue_id": "iss_waiting"},
    )
    ctx.store.save(run)
    return run


def finish_the_ladder_run(ctx: Context, run: Stream) -> None:
    t = AT + timedelta(seconds=5)
    run.add(
        HumanAnswered,
        t,
        step_id="draft",
        instance_id="draft#4",
        resolution="shorter",
        issue_id="iss_waiting",
    )
    decided(run, t, "draft#4", "me answered", kind="answered", subject="draft", by="me")
    step(run, t, 1, "draft", "draft#5")
    completed(run, t, 1, "draft", "draft#5")
    step(run, t, 2, "polish", "polish")
    failed(run, t, 2, "polish", "polish")
    decided(
        run,
        t,
        "polish",
        "deferred by triage",
        kind="deferred",
        subject="polish",
        skipped=["polish", "gap"],
    )
    run.add(RunCompleted, t + timedelta(seconds=1), outcome=12)
    iteration = Iteration.for_target('tiny_pipeline {"scene":4}')
    iteration.archive(
        t + timedelta(seconds=2),
        recipe_id="tiny_pipeline",
        run_id=run.id,
        result="partial",
        outcome=12,
        deferred=[{"step_id": "polish", "reason": "too long", "note": "next time"}],
        relaxed=[],
        rungs={"escalate": 1, "consult": 1, "human": 1, "answered": 1, "deferred": 1},
        gap_analysis="# Gap\nPolish is still open.",
    )
    ctx.store.save(run, iteration)


def test_the_status_follows_a_run_that_climbs_its_ladder_waits_and_is_archived(
    ctx: Context,
) -> None:
    run = the_ladder_run(ctx)
    with Views.for_store(ctx.store) as views:
        views.catch_up()
        (summary,) = views.pipelines.pipelines()
        target_id = iteration_id('tiny_pipeline {"scene":4}')
        assert (summary.target_id, summary.target, summary.recipe_id) == (
            target_id,
            'tiny_pipeline {"scene":4}',
            "tiny_pipeline",
        )
        assert (summary.iteration, summary.run_status, summary.current_step) == (
            1,
            "waiting",
            "draft",
        )
        assert (summary.blockers, summary.escalations, summary.iterations) == (1, 3, 0)
        detail = views.pipelines.pipeline(target_id)
        assert detail.current is not None
        states = {s.step_id: (s.state, s.runs) for s in detail.current.steps}
        assert states == {
            "find": ("done", 1),
            "draft": ("waiting", 4),
            "polish": ("pending", 0),
            "gap": ("pending", 0),
        }
        (blocker,) = detail.current.blockers
        assert (blocker.step_id, blocker.issue_id, blocker.owner) == ("draft", "iss_waiting", "me")
        assert [(e.kind, e.from_model, e.to_model) for e in detail.current.escalations] == [
            ("escalate", "offline:flaky-1", "offline:flaky-2"),
            ("consult", None, None),
            ("human", None, None),
        ]
        markdown = render_status([detail], detail.position)
        assert "- 🔄 Phase 1: `draft` (agent, writer) — waiting, run 4 times" in markdown
        assert "⛔ Blocker: `draft` waits for me, issue `iss_waiting`" in markdown
        assert "- Peer consults: `draft`" in markdown
        assert "No iteration archived yet." in markdown

        finish_the_ladder_run(ctx, run)
        views.catch_up()
        detail = views.pipelines.pipeline(target_id)
        assert detail.current is not None
        assert (detail.current.status, detail.current.outcome, detail.current.blockers) == (
            "partial",
            12,
            [],
        )
        assert {s.step_id: s.state for s in detail.current.steps} == {
            "find": "done",
            "draft": "done",
            "polish": "deferred",
            "gap": "skipped",
        }
        assert [e.kind for e in detail.current.escalations][-2:] == ["answered", "deferred"]
        (archived,) = detail.history
        assert (archived.number, archived.run_id, archived.result) == (1, "run_tiny", "partial")
        assert (archived.deferred, archived.relaxed, archived.outcome) == (1, 0, 12)
        assert archived.gap_analysis == "# Gap\nPolish is still open."
        assert detail.iteration == 1 and detail.position == ctx.store.max_position()
        markdown = render_status([detail], detail.position)
        assert "- ⏭️ Phase 2: `polish` (agent, editor) — deferred" in markdown
        assert "- ⏭️ Phase 3: `gap` (agent, planner) — skipped" in markdown
        assert "| #1 | partial (outcome 12) | 1 | 0 |" in markdown
        assert "> Polish is still open." in markdown
        assert f"log position {ctx.store.max_position()}" in markdown


def test_a_rebuild_equals_the_status_caught_up_in_small_batches(ctx: Context) -> None:
    run = the_ladder_run(ctx)
    with Views.for_store(ctx.store) as views:
        views.catch_up(batch_size=3)
        finish_the_ladder_run(ctx, run)
        views.catch_up(batch_size=2)
        live = views.dump()
        assert live["pipelines"] and live["pipeline_runs"]
        views.rebuild("status")
        assert views.dump() == live


def test_an_unknown_target_is_not_found(ctx: Context) -> None:
    with Views.for_store(ctx.store) as views:
        views.catch_up()
        for wrong in ("itr_" + "0" * 24, "nope", "itr_x\x00"):
            with pytest.raises(PipelineNotFoundError):
                views.pipelines.pipeline(wrong)
        assert views.pipelines.pipelines() == []


# -- real runs ----------------------------------------------------------------------------------


def test_runs_of_other_recipes_are_no_pipeline_and_export_nothing(
    pipeline_ctx: Context, views: Views
) -> None:
    service = RunService(pipeline_ctx)
    asyncio.run(service.execute(service.start(RunRequest("structural_outline", {}))))
    Followers(pipeline_ctx.store, views).catch_up()
    assert views.pipelines.pipelines() == []
    assert not status_file(pipeline_ctx).exists()
    assert report_events(pipeline_ctx) == []


def test_each_target_has_its_own_iterations_and_status_md_one_section_each(
    pipeline_ctx: Context, views: Views
) -> None:
    first = run_pipeline(pipeline_ctx, 4)
    Followers(pipeline_ctx.store, views).catch_up()  # archives it
    second = run_pipeline(pipeline_ctx, 4)
    other = run_pipeline(pipeline_ctx, 5)
    Followers(pipeline_ctx.store, views).catch_up()
    rows = {r.target: r for r in views.pipelines.pipelines()}
    assert set(rows) == {f'{PIPELINE} {{"scene_number":4}}', f'{PIPELINE} {{"scene_number":5}}'}
    four = rows[f'{PIPELINE} {{"scene_number":4}}']
    assert (four.iteration, four.run_id, four.run_status, four.iterations) == (2, second, "done", 2)
    assert rows[f'{PIPELINE} {{"scene_number":5}}'].run_id == other
    detail = views.pipelines.pipeline(four.target_id)
    assert [(h.number, h.run_id, h.result) for h in detail.history] == [
        (1, first, "done"),
        (2, second, "done"),
    ]
    assert detail.current is not None
    assert all(s.state == "done" for s in detail.current.steps)
    text = status_file(pipeline_ctx).read_text()
    assert text.count("## Pipeline `") == 2
    assert "**Iteration:** 2" in text and "**Iteration:** 1" in text
    assert "| #2 | done (outcome 0) | 0 | 0 |" in text


# -- the export ---------------------------------------------------------------------------------


def test_status_md_is_exported_once_per_change_with_its_hashes(
    pipeline_ctx: Context, views: Views
) -> None:
    run_pipeline(pipeline_ctx)
    followers = Followers(pipeline_ctx.store, views)
    followers.catch_up()
    path = status_file(pipeline_ctx)
    first = path.read_bytes()
    intended, exported = report_events(pipeline_ctx)
    assert isinstance(intended, StatusExportIntended) and isinstance(exported, StatusExported)
    assert (exported.sha256_before, exported.sha256_after) == (None, sha(first))
    assert exported.path == STATUS_PATH and not exported.already_applied
    position, details = views.pipelines.snapshot()
    assert exported.position == position and first == render_status(details, position).encode()
    assert views.pipelines.export() is not None
    assert views.pipelines.export().state == "exported"  # type: ignore[union-attr]

    head = pipeline_ctx.store.max_position()
    assert followers.catch_up() == 0 and Followers(pipeline_ctx.store, views).catch_up() == 0
    assert pipeline_ctx.store.max_position() == head  # nothing changed: nothing exported

    run_pipeline(pipeline_ctx)
    followers.catch_up()
    second = path.read_bytes()
    assert second != first and b"**Iteration:** 2" in second
    events = report_events(pipeline_ctx)
    assert [type(e) for e in events] == [StatusExportIntended, StatusExported] * 2
    last = events[-1]
    assert isinstance(last, StatusExported)
    assert (last.sha256_before, last.sha256_after) == (sha(first), sha(second))


def test_a_hand_edited_status_md_is_never_overwritten_and_the_conflict_is_an_issue(
    pipeline_ctx: Context, views: Views
) -> None:
    run_pipeline(pipeline_ctx)
    followers = Followers(pipeline_ctx.store, views)
    followers.catch_up()
    path = status_file(pipeline_ctx)
    edited = path.read_bytes() + b"\nmy own note\n"
    path.write_bytes(edited)

    run_pipeline(pipeline_ctx)
    followers.catch_up()
    assert path.read_bytes() == edited
    failure = report_events(pipeline_ctx)[-1]
    assert isinstance(failure, StatusExportFailed) and failure.kind == "conflict"
    assert failure.found == sha(edited) and "changed by someone else" in failure.reason
    state = views.pipelines.export()
    assert state is not None and (state.state, state.sha256) == ("conflict", sha(edited))
    opened = [
        r
        for r in pipeline_ctx.store.read_log()
        if isinstance(r.event, IssueOpened) and r.event.kind == "file_conflict"
    ]
    assert len(opened) == 1 and STATUS_PATH in opened[0].event.title

    run_pipeline(pipeline_ctx)  # another change: still not overwritten, no second issue
    followers.catch_up()
    assert path.read_bytes() == edited
    assert isinstance(report_events(pipeline_ctx)[-1], StatusExportFailed)
    issues = [r for r in pipeline_ctx.store.read_log() if isinstance(r.event, IssueOpened)]
    assert len([i for i in issues if i.event.kind == "file_conflict"]) == 1

    path.unlink()  # the person lets Control Room write it again
    StatusExporter(pipeline_ctx.store, views, pipeline_ctx.workspace.root).catch_up(retry=True)
    followers.catch_up()
    exported = report_events(pipeline_ctx)[-1]
    assert isinstance(exported, StatusExported) and exported.sha256_before is None
    assert b"**Iteration:** 3" in path.read_bytes()
    closed = [r.event for r in pipeline_ctx.store.read_log() if isinstance(r.event, IssueClosed)]
    assert [c.originator_id for c in closed] == [opened[0].event.originator_id]


def test_a_status_md_someone_else_made_first_is_left_alone(
    pipeline_ctx: Context, views: Views
) -> None:
    path = status_file(pipeline_ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# my project status\n")
    run_pipeline(pipeline_ctx)
    Followers(pipeline_ctx.store, views).catch_up()
    assert path.read_text() == "# my project status\n"
    (failure,) = report_events(pipeline_ctx)
    assert isinstance(failure, StatusExportFailed) and failure.expected == {
        "as the last export left it": None
    }


def test_a_link_in_place_of_status_md_or_its_folder_is_refused(
    pipeline_ctx: Context, views: Views, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("not yours\n")
    path = status_file(pipeline_ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)
    run_pipeline(pipeline_ctx)
    followers = Followers(pipeline_ctx.store, views)
    followers.catch_up()
    assert outside.read_text() == "not yours\n" and path.is_symlink()
    failure = report_events(pipeline_ctx)[-1]
    assert isinstance(failure, StatusExportFailed) and failure.kind == "refused"
    assert "link" in failure.reason

    # The folder itself a link out of the workspace: refused as well.
    path.unlink()
    path.parent.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path.parent.symlink_to(elsewhere, target_is_directory=True)
    run_pipeline(pipeline_ctx)
    followers.catch_up()
    assert list(elsewhere.iterdir()) == []
    failure = report_events(pipeline_ctx)[-1]
    assert isinstance(failure, StatusExportFailed) and failure.kind == "refused"
    state = views.pipelines.export()
    assert state is not None and state.state == "refused"


def test_an_export_killed_after_its_intent_is_resolved_by_the_files_hash(
    pipeline_ctx: Context, views: Views
) -> None:
    run_pipeline(pipeline_ctx)
    views.catch_up()
    Followers(pipeline_ctx.store, views, exporters=[]).catch_up()  # the archive, no export
    position, details = views.pipelines.snapshot()
    data = render_status(details, position).encode()
    report = StatusReport.for_path(STATUS_PATH)
    report.intend(datetime.now(UTC), None, sha(data), len(data), position)
    pipeline_ctx.store.save(report)  # ... and killed before writing
    root = pipeline_ctx.workspace.root

    # A fresh intent is another process's write in progress: left to it.
    assert StatusExporter(pipeline_ctx.store, views, root).catch_up() == 0
    assert not status_file(pipeline_ctx).exists()

    assert StatusExporter(pipeline_ctx.store, views, root, clock=Later()).catch_up() == 2
    intended, exported = report_events(pipeline_ctx)[1:]
    assert isinstance(intended, StatusExportIntended) and isinstance(exported, StatusExported)
    assert status_file(pipeline_ctx).read_bytes() == data and not exported.already_applied

    # Killed after writing, before recording it: found written, recorded, not redone.
    run_pipeline(pipeline_ctx)
    Followers(pipeline_ctx.store, views, exporters=[]).catch_up()
    position, details = views.pipelines.snapshot()
    newer = render_status(details, position).encode()
    report = pipeline_ctx.store.load(StatusReport, status_report_id(STATUS_PATH))
    assert report is not None
    report.intend(datetime.now(UTC), sha(data), sha(newer), len(newer), position)
    pipeline_ctx.store.save(report)
    status_file(pipeline_ctx).write_bytes(newer)
    mtime = os.stat(status_file(pipeline_ctx)).st_mtime_ns
    assert StatusExporter(pipeline_ctx.store, views, root, clock=Later()).catch_up() == 1
    done = report_events(pipeline_ctx)[-1]
    assert isinstance(done, StatusExported) and done.already_applied
    assert (done.sha256_before, done.sha256_after) == (sha(data), sha(newer))
    assert os.stat(status_file(pipeline_ctx)).st_mtime_ns == mtime

    # Killed after its intent, and the file then edited by someone: a conflict, not a write.
    run_pipeline(pipeline_ctx)
    Followers(pipeline_ctx.store, views, exporters=[]).catch_up()
    report = pipeline_ctx.store.load(StatusReport, status_report_id(STATUS_PATH))
    assert report is not None
    report.intend(datetime.now(UTC), sha(newer), "0" * 64, 1, position + 1)
    pipeline_ctx.store.save(report)
    status_file(pipeline_ctx).write_text("mine now\n")
    StatusExporter(pipeline_ctx.store, views, root, clock=Later()).catch_up()
    assert status_file(pipeline_ctx).read_text() == "mine now\n"
    failure = report_events(pipeline_ctx)[-1]
    assert isinstance(failure, StatusExportFailed) and "outcome unknown" in failure.reason


def test_two_exporters_of_one_change_write_it_once(pipeline_ctx: Context, views: Views) -> None:
    run_pipeline(pipeline_ctx)
    Followers(pipeline_ctx.store, views, exporters=[]).catch_up()
    root = pipeline_ctx.workspace.root
    with Views.for_store(pipeline_ctx.store, root) as other:
        other.catch_up()
        first = StatusExporter(pipeline_ctx.store, views, root)
        second = StatusExporter(pipeline_ctx.store, other, root)
        assert first.catch_up() == 2
        assert second.catch_up() == 0
    assert [type(e) for e in report_events(pipeline_ctx)] == [
        StatusExportIntended,
        StatusExported,
    ]
