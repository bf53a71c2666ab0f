"""The engine through the application: runs, receipts, agents, DoD, issues, crashes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from controlroom.domain.errors import (
    MissingArgsError,
    ModelError,
    NotRoutableError,
    RunConflictError,
    UnknownRecipeError,
)
from controlroom.domain.issue import IssueOpened
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentResponded,
    ReceiptIssued,
    RunStarted,
    SlotWritten,
    StepCompleted,
    StepFailed,
)
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.runner import StepRunner
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.config import store_env
from controlroom.models.agents import AgentDirectory
from controlroom.projections.views import Views
from tests.conftest import write_override
from tests.fakes import CountingStore, RecordingModel

DRAFT = "Draft scene 4 from the outline"


def issues_of(ctx: Context, run_id: str) -> list[dict[str, object]]:
    views = Views.for_store(ctx.store)
    Followers(ctx.store, views).catch_up()
    return [i.model_dump(mode="json") for i in views.query.issues(run_id=run_id)]


def run_to_end(service: RunService, task: str, **args: object) -> Run:
    run = service.start(RunRequest(task, dict(args)))
    return asyncio.run(service.execute(run))


def open_ctx(workspace: Path, model: RecordingModel | None = None) -> Context:
    agents = AgentDirectory(clients={"offline": model or RecordingModel()})
    return Context.open(workspace, store=CountingStore(env=store_env(workspace)), agents=agents)


def slot_hashes(ctx: Context, run_id: str) -> dict[str, str]:
    return {e.slot: e.sha256 for e in ctx.store.stream(run_id) if isinstance(e, SlotWritten)}


def test_a_routed_task_runs_to_done_with_one_commit_per_step(workspace: Path) -> None:
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), DRAFT)
    assert run.status == RunStatus.DONE and run.error is None
    assert isinstance(ctx.store, CountingStore)
    # The start, one per step, and the write_file step's intent, committed before it writes.
    assert ctx.store.event_commits == 1 + run.total_steps + 1
    started = ctx.store.stream(run.id)[0]
    assert isinstance(started, RunStarted)
    assert started.routing is not None and started.routing.recipe_id == "creative_draft_scene"
    assert started.task.args == {"scene_number": 4}
    completed = [e.step_id for e in ctx.store.stream(run.id) if isinstance(e, StepCompleted)]
    assert completed == [s.step_id for s in run.recipe_steps]


def test_every_tool_call_has_a_receipt_linked_to_the_session(workspace: Path) -> None:
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), DRAFT)
    receipts = [e for e in ctx.store.stream(run.id) if isinstance(e, ReceiptIssued)]
    assert [r.tool for r in receipts] == ["file_locator", "outline_analyzer", "canon_checker"]
    assert all(
        r.session_id == run.session_id and r.receipt_id.startswith("rcpt_") for r in receipts
    )
    assert receipts[1].args["outline_path"] == "Story/SCN-outline.md"
    assert receipts[1].input_slot_refs == ["discovery.outline", "task.description", "task.args"]
    pointers = {
        e.slot: e
        for e in ctx.store.stream(run.id)
        if isinstance(e, SlotWritten) and e.kind == "pointer"
    }
    assert pointers["discovery"].receipt_id == receipts[0].receipt_id
    assert pointers["discovery"].sha256 == receipts[0].output_sha256


def test_agents_see_only_the_template_and_their_slots(workspace: Path) -> None:
    model = RecordingModel()
    ctx = open_ctx(workspace, model)
    run = run_to_end(RunService(ctx), DRAFT)
    planner, writer, editor = model.requests[:3]
    assert set(planner.inputs) == {"outline_beat", "canon_context"}
    # A pointer slot contributes its summary; an artifact slot its full text.
    assert planner.inputs["canon_context"].startswith("Canon: 4 cards, 12 facts")
    brief = next(
        e.text
        for e in ctx.store.stream(run.id)
        if isinstance(e, SlotWritten) and e.slot == "scene_brief"
    )
    assert writer.inputs["scene_brief"] == brief and brief in writer.prompt
    assert set(editor.inputs) == {"draft"} and "Canon:" not in editor.prompt
    responded = [e for e in ctx.store.stream(run.id) if isinstance(e, AgentResponded)]
    assert {(e.provider, e.model, e.tier) for e in responded} == {
        ("offline", "offline-deterministic-1", "t3")
    }
    assert all(e.prompt_hash.startswith("sha256:") and e.usage.output_tokens > 0 for e in responded)


def test_the_planted_canon_contradiction_fails_the_dod_and_opens_an_issue(
    workspace: Path,
) -> None:
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), "check consistency of the scenes against canon")
    assert run.status == RunStatus.FAILED and "Definition of Done" in (run.error or "")
    issues = issues_of(ctx, run.id)
    assert len(issues) == 1
    issue = issues[0]
    assert issue["session_id"] == run.session_id
    # The tool's own finding fails the DoD: no model's `pass` can overrule it.
    assert issue["check"] == {
        "check": "slot_field_empty",
        "slot": "consistency_report",
        "field": "findings",
    }
    assert "Kael's eyes are 'green' but canon says 'grey'" in json.dumps(issue["evidence"])
    corrections = run.slot_values["corrections"]
    assert "change 'green' to 'grey'" in corrections


def test_issues_are_opened_once_even_when_a_finished_run_is_resumed(workspace: Path) -> None:
    ctx = open_ctx(workspace)
    service = RunService(ctx)
    run = run_to_end(service, "consistency check")
    asyncio.run(service.resume(run.id))
    # Two catch-up loops (as two processes would run) react to the same DodChecked.
    assert Followers(ctx.store).catch_up() == 1
    assert Followers(ctx.store).catch_up() == 0
    opened = [p for p in ctx.store.read_log() if isinstance(p.event, IssueOpened)]
    assert len(opened) == 1


def test_a_run_interrupted_mid_way_resumes_to_the_same_result(
    workspace: Path, tmp_path: Path
) -> None:
    reference = run_to_end(RunService(open_ctx(workspace)), DRAFT)
    reference_hashes = slot_hashes(open_ctx(workspace), reference.id)
    # The scene file the reference wrote goes, so the resumed run writes it as it did.
    (workspace / "Story" / "Scenes" / "SCN-04-the-reckoning.md").unlink()

    crashing = open_ctx(workspace, RecordingModel(fail_on_call=3, failure=KeyboardInterrupt()))
    run = RunService(crashing).start(RunRequest(DRAFT, {}))
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(RunService(crashing).execute(run))
    crashing.close()

    after = open_ctx(workspace)  # a new process, as far as the store is concerned
    interrupted = RunService(after).load(run.id)
    assert interrupted.status == RunStatus.RUNNING and interrupted.current_step_index == 5
    resumed = asyncio.run(RunService(after).resume(run.id))
    assert resumed.status == RunStatus.DONE
    completed = [e.step_index for e in after.store.stream(run.id) if isinstance(e, StepCompleted)]
    assert completed == list(range(11))
    assert slot_hashes(after, run.id) == reference_hashes


def test_a_failed_agent_halts_the_pipeline_without_retry(workspace: Path) -> None:
    model = RecordingModel(fail_on_call=2, failure=ModelError("the writer fell over"))
    ctx = open_ctx(workspace, model)
    run = run_to_end(RunService(ctx), DRAFT)
    assert run.status == RunStatus.FAILED and "the writer fell over" in (run.error or "")
    assert len(model.requests) == 2
    failed = [e for e in ctx.store.stream(run.id) if isinstance(e, StepFailed)]
    assert [(e.step_id, e.error_type) for e in failed] == [("draft", "ModelError")]
    assert issues_of(ctx, run.id) == []


def test_a_broken_ref_fails_its_step_naming_the_path(workspace: Path) -> None:
    write_override(
        workspace,
        "broken_ref.json",
        json.dumps(
            {
                "recipe_id": "broken_ref",
                "phase_a": [
                    {"step_id": "find", "tool": "file_locator", "args": {}, "output_slot": "found"},
                    {
                        "step_id": "check",
                        "tool": "scene_draft_validator",
                        "args": {"scene_path": {"$ref": "found.matches[99].path"}},
                        "output_slot": "v",
                    },
                ],
                "dod": [{"check": "slot_not_null", "slot": "v"}],
            }
        ),
    )
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), "broken_ref")
    assert run.status == RunStatus.FAILED
    assert "found.matches[99]" in (run.error or "") and "out of range" in (run.error or "")


def test_a_path_escaping_the_workspace_fails_the_step(workspace: Path) -> None:
    write_override(
        workspace,
        "validate_path.json",
        json.dumps(
            {
                "recipe_id": "validate_path",
                "phase_a": [
                    {
                        "step_id": "check",
                        "tool": "scene_draft_validator",
                        "args": {"scene_path": {"$ref": "task.args.scene_path"}},
                        "output_slot": "v",
                    }
                ],
                "dod": [{"check": "slot_not_null", "slot": "v"}],
            }
        ),
    )
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), "validate_path", scene_path="../../etc/passwd")
    assert run.status == RunStatus.FAILED and "'..'" in (run.error or "")


def test_an_oversized_payload_fails_the_step_and_keeps_the_store_intact(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above the run's start (its recipe snapshot, about 4.7 KB) and below the outline
    # analysis's receipt (about 7.7 KB): the start is recorded and a step fails.
    monkeypatch.setenv("CONTROLROOM_MAX_EVENT_BYTES", "6144")
    ctx = open_ctx(workspace)
    run = run_to_end(RunService(ctx), DRAFT)
    assert run.status == RunStatus.FAILED
    assert "over the limit of 6144 bytes" in (run.error or "")
    events = ctx.store.stream(run.id)
    assert [type(e).__name__ for e in events][-2:] == ["StepFailed", "RunFailed"]
    assert RunService(open_ctx(workspace)).load(run.id).status == RunStatus.FAILED


def test_two_processes_cannot_both_advance_a_run(workspace: Path) -> None:
    first, second = open_ctx(workspace), open_ctx(workspace)
    run = RunService(first).start(RunRequest(DRAFT, {}))
    stale = RunService(second).load(run.id)
    asyncio.run(RunService(first).execute(run))
    with pytest.raises(RunConflictError):
        asyncio.run(StepRunner(second).execute(stale))


def test_cancelling_from_elsewhere_stops_the_run(workspace: Path) -> None:
    runner_ctx, other = open_ctx(workspace), open_ctx(workspace)
    run = RunService(runner_ctx).start(RunRequest(DRAFT, {}))
    RunService(other).cancel(run.id, "changed my mind")
    final = asyncio.run(RunService(runner_ctx).execute(run))
    assert final.status == RunStatus.CANCELLED
    assert RunService(other).load(run.id).status == RunStatus.CANCELLED


def test_bad_requests_are_refused_before_anything_is_recorded(workspace: Path) -> None:
    write_override(
        workspace,
        "needs_args.json",
        json.dumps(
            {
                "recipe_id": "needs_args",
                "phase_a": [
                    {
                        "step_id": "check",
                        "tool": "scene_draft_validator",
                        "args": {
                            "scene_path": {"$ref": "task.args.scene_path"},
                            "outline_path": {"$ref": "task.args.outline_path"},
                        },
                        "output_slot": "v",
                    }
                ],
                "dod": [],
            }
        ),
    )
    ctx = open_ctx(workspace)
    service = RunService(ctx)
    with pytest.raises(MissingArgsError, match="outline_path, scene_path"):
        service.start(RunRequest("needs_args", {}))
    with pytest.raises(NotRoutableError):
        service.start(RunRequest("bake some bread", {}))
    with pytest.raises(UnknownRecipeError):
        service.plan(RunRequest("no_such_recipe", {}))
    assert ctx.store.max_position() == 0
