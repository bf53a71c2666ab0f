"""Runs inside runs (seed 004): the propagation table cell by cell, the pure decisions of a
step's children, and trees run through the application and the CLI: depth budget, codes
that travel up, partial success, cancellation down the tree, no child started twice."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.child_runs import (
    ChildRunEnded,
    ChildRunsRequested,
    ChildRunStarted,
    child_run_id,
    next_moves,
)
from controlroom.domain.events import DomainEvent
from controlroom.domain.outcome_codes import (
    MAX_CHILD_ATTEMPTS,
    PROPAGATION,
    Layer,
    Outcome,
    Reaction,
    settled,
)
from controlroom.domain.run import Run, RunStatus
from controlroom.engine.child_policies import ChildRunsPolicy, children_of, tree_runs
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.policies import Unit
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.tree_driver import drive_tree
from controlroom.projections.views import Views
from tests.conftest import write_override
from tests.test_cli_e2e import cli as run_cli

CLI = str(Path(sys.executable).with_name("controlroom"))

# -- the table, cell by cell ---------------------------------------------------------------

#: Seed 004 §5, read off the seed's table: (child code, layer) -> what the parent does on
#: the child's first ending, and the code it ends with if it re-raises.
SEED_TABLE: dict[tuple[int, str], tuple[Reaction, int | None]] = {
    (0, "orchestrator"): (Reaction.ABSORB, None),
    (0, "coordinator"): (Reaction.ABSORB, None),
    (0, "campaign"): (Reaction.ABSORB, None),
    (1, "orchestrator"): (Reaction.RETRY_ONCE, None),
    (1, "coordinator"): (Reaction.RETRY_ONCE, None),
    (1, "campaign"): (Reaction.ESCALATE, 11),
    (2, "orchestrator"): (Reaction.RERAISE, 2),
    (2, "coordinator"): (Reaction.RERAISE, 2),
    (2, "campaign"): (Reaction.RERAISE, 2),
    (3, "orchestrator"): (Reaction.RERAISE, 3),
    (3, "coordinator"): (Reaction.RERAISE, 3),
    (3, "campaign"): (Reaction.RERAISE, 3),
    (10, "orchestrator"): (Reaction.RERAISE, 10),
    (10, "coordinator"): (Reaction.REINVOKE_WITH_RESOLUTION, None),
    (10, "campaign"): (Reaction.RETRY_ONCE, None),
    (11, "orchestrator"): (Reaction.RERAISE, 11),
    (11, "coordinator"): (Reaction.RERAISE, 11),
    (11, "campaign"): (Reaction.PRESENT_TO_HUMAN, 3),
    (12, "orchestrator"): (Reaction.ABSORB_PARTIAL, None),
    (12, "coordinator"): (Reaction.ABSORB_PARTIAL, None),
    (12, "campaign"): (Reaction.ABSORB_PARTIAL, None),
    (20, "orchestrator"): (Reaction.RERAISE, 20),
    (20, "coordinator"): (Reaction.RERAISE, 20),
    (20, "campaign"): (Reaction.RERAISE, 20),
    (21, "orchestrator"): (Reaction.RERAISE, 21),
    (21, "coordinator"): (Reaction.RERAISE, 21),
    (21, "campaign"): (Reaction.RERAISE, 21),
}


def test_the_table_has_every_code_and_layer() -> None:
    assert {code for code, _ in SEED_TABLE} == {int(o) for o in Outcome}
    assert set(PROPAGATION) == set(Outcome)
    assert all(set(row) == set(Layer) for row in PROPAGATION.values())


@pytest.mark.parametrize(("cell", "expected"), sorted(SEED_TABLE.items()))
def test_each_cell_of_the_propagation_table(
    cell: tuple[int, str], expected: tuple[Reaction, int | None]
) -> None:
    code, layer = cell
    assert settled(Layer(layer), code, attempt=1) == expected


@pytest.mark.parametrize("layer", list(Layer))
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_depth_exceeded_is_never_absorbed(layer: Layer, attempt: int) -> None:
    assert settled(layer, 2, attempt) == (Reaction.RERAISE, 2)


@pytest.mark.parametrize("layer", list(Layer))
def test_a_second_chance_is_given_once(layer: Layer) -> None:
    for code in (1, 10):
        chosen, _ = settled(layer, code, 1)
        if chosen in (Reaction.RETRY_ONCE, Reaction.REINVOKE_WITH_RESOLUTION):
            assert settled(layer, code, MAX_CHILD_ATTEMPTS) == (Reaction.RERAISE, code)


# -- the decisions of one step's children --------------------------------------------------


def _requested(count: int, layer: str = "orchestrator", at_once: int = 2) -> ChildRunsRequested:
    return ChildRunsRequested(
        originator_id="run_p",
        originator_version=1,
        timestamp=_now(),
        prev_hash="",
        step_id="s",
        instance_id="s",
        recipe_id="r",
        recipe={"recipe_id": "r"},
        children=[{"index": i, "args": {"i": i}, "description": "d"} for i in range(count)],
        max_at_once=at_once,
        layer=layer,
        depth=1,
        max_depth=3,
        root_run_id="run_p",
    )


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime(2026, 1, 1, tzinfo=UTC)


def _started(index: int, attempt: int = 1) -> ChildRunStarted:
    return ChildRunStarted(
        originator_id="run_p",
        originator_version=2,
        timestamp=_now(),
        prev_hash="",
        step_id="s",
        instance_id="s",
        index=index,
        attempt=attempt,
        run_id=child_run_id("run_p", "s", index, attempt),
    )


def _ended(index: int, outcome: int, attempt: int = 1) -> ChildRunEnded:
    return ChildRunEnded(
        originator_id="run_p",
        originator_version=3,
        timestamp=_now(),
        prev_hash="",
        step_id="s",
        instance_id="s",
        index=index,
        attempt=attempt,
        run_id=child_run_id("run_p", "s", index, attempt),
        status="done" if outcome in (0, 12) else "failed",
        outcome=outcome,
    )


def test_children_start_at_most_max_at_once_and_the_next_when_one_ends() -> None:
    requested = _requested(5, at_once=2)
    first = next_moves("run_p", "s", requested, [], [])
    assert [s.index for s in first.start] == [0, 1] and first.settle is None
    assert first.start[0].run_id == child_run_id("run_p", "s", 0, 1)
    assert first.start[0].args == {"i": 0}
    later = next_moves("run_p", "s", requested, [_started(0), _started(1)], [_ended(0, 0)])
    assert [s.index for s in later.start] == [2]


def test_a_failed_stage_runs_once_more_then_its_failure_travels_up() -> None:
    requested = _requested(1)
    again = next_moves("run_p", "s", requested, [_started(0)], [_ended(0, 1)])
    assert [(s.index, s.attempt) for s in again.start] == [(0, 2)]
    done = next_moves(
        "run_p", "s", requested, [_started(0), _started(0, 2)], [_ended(0, 1), _ended(0, 1, 2)]
    )
    assert done.settle is not None and done.settle.outcome == 1 and done.settle.failure


def test_a_coordinator_reinvokes_a_child_needing_refinement_with_the_resolution() -> None:
    requested = _requested(1, layer="coordinator")
    ended = _ended(0, 10).model_copy(update={"error": "the critic wants a tighter ending"})
    moves = next_moves("run_p", "s", requested, [_started(0)], [ended])
    assert moves.start[0].attempt == 2
    assert moves.start[0].args["resolution"] == "the critic wants a tighter ending"


def test_a_fan_out_with_some_failures_is_a_partial_success_but_a_depth_is_not() -> None:
    requested = _requested(3, layer="coordinator", at_once=3)
    started = [_started(i) for i in range(3)] + [_started(1, 2)]
    partial = next_moves(
        "run_p",
        "s",
        requested,
        started,
        [_ended(0, 0), _ended(1, 1), _ended(1, 1, 2), _ended(2, 0)],
    )
    assert partial.settle is not None
    assert (partial.settle.failure, partial.settle.partial) == (None, True)
    # A depth exceeded: item 2, still running, is waited for, but not retried once it
    # fails, and the depth travels up ahead of its failure.
    depth = next_moves("run_p", "s", requested, started[:3], [_ended(0, 0), _ended(1, 2)])
    assert depth.settle is None and depth.start == []
    ended = [_ended(0, 0), _ended(1, 2), _ended(2, 1)]
    final = next_moves("run_p", "s", requested, started[:3], ended)
    assert final.start == [] and final.settle is not None and final.settle.outcome == 2


def test_no_child_starts_after_a_depth_exceeded() -> None:
    requested = _requested(4, at_once=1)
    moves = next_moves("run_p", "s", requested, [_started(0)], [_ended(0, 2)])
    assert moves.start == [] and moves.settle is not None and moves.settle.outcome == 2


# -- trees through the application -----------------------------------------------------------


def _drive(ctx: Context, task: str, **args: Any) -> Run:
    service = RunService(ctx)
    run = service.start(RunRequest(task, args, is_recipe_id=True), owner="test-owner")
    run = asyncio.run(service.execute(run))
    followers = Followers(ctx.store, Views.for_store(ctx.store, ctx.workspace.root))
    return asyncio.run(drive_tree(ctx, run, followers, "test-owner"))


def test_an_orchestrator_runs_its_stages_as_child_runs(ctx: Context) -> None:
    root = _drive(ctx, "chapter_revision", scene_number=1)
    assert (root.status, root.outcome) == (RunStatus.DONE, 0)
    children = [ctx.store.load(Run, c) for c in children_of(root)]
    assert [c.recipe.recipe_id for c in children if c and c.recipe] == [
        "analytical_consistency",
        "analytical_prose",
    ]
    for child in children:
        assert child is not None and child.status == RunStatus.DONE
        assert child.origin.kind == "parent_step" and child.origin.parent_run_id == root.id
        assert (child.origin.depth, child.origin.max_depth) == (1, 3)
        assert child.origin.root_run_id == root.id and child.trace_id == root.trace_id
        assert child.task.args == {"scene_number": 1}  # the stage sees the scope
        assert child.workspace == root.workspace  # a child works where its parent does
        # taken up for the first time, never interrupted: started, not resumed
        assert not [e for e in ctx.store.stream(child.id) if type(e).__name__ == "RunResumed"]
    manifest = root.slot_values["prose_stage"]
    assert manifest["children"][0]["outcome_name"] == "SUCCESS"


def test_a_grandchild_past_the_depth_budget_ends_every_layer_depth_exceeded(
    ctx: Context,
) -> None:
    root = _drive(ctx, "manuscript_revision", max_depth=1)
    assert (root.status, root.outcome) == (RunStatus.FAILED, 2)
    tree = list(tree_runs(ctx.store, root))
    orchestrators = [r for r in tree if r.origin.depth == 1]
    assert orchestrators and all(r.outcome == 2 for r in orchestrators)
    # Not retried (never absorbed), no chapter started after the first depth came back
    # (two were running at once), and no grandchild started past the budget.
    assert len(orchestrators) == 2
    assert max(r.origin.depth for r in tree) == 1
    assert [c["index"] for c in _manifest_children(root)] == []
    assert "depth budget of 1" in (root.error or "")


def _manifest_children(run: Run) -> list[Any]:
    value = run.slot_values.get("chapters")
    return list(value["children"]) if isinstance(value, dict) else []


def test_a_coordinator_whose_chapters_partly_fail_is_a_partial_success(ctx: Context) -> None:
    root = _drive(ctx, "manuscript_revision")
    assert (root.status, root.outcome) == (RunStatus.DONE, 12)
    chapters = root.slot_values["chapters"]
    outcomes = sorted(c["outcome"] for c in chapters["children"])
    assert 0 in outcomes and 1 in outcomes  # scene 2's consistency check fails its DoD
    failed = next(c for c in chapters["children"] if c["outcome"] == 1)
    assert failed["attempt"] == 2  # retried once before it was set aside


def test_cancelling_the_root_cancels_every_run_below_it(ctx: Context) -> None:
    service = RunService(ctx)
    followers = Followers(ctx.store, Views.for_store(ctx.store, ctx.workspace.root))
    root = service.start(RunRequest("manuscript_revision", {}, is_recipe_id=True), owner="o")
    root = asyncio.run(service.execute(root))
    assert root.is_waiting
    followers.catch_up()  # the coordinator's first chapters start (two at once)
    orchestrators = children_of(service.load(root.id))
    assert len(orchestrators) == 2
    first = asyncio.run(service.resume(orchestrators[0], owner="o"))
    assert first.is_waiting
    followers.catch_up()  # its first stage starts
    grandchildren = children_of(service.load(first.id))
    assert len(grandchildren) == 1
    service.cancel(root.id)
    followers.catch_up()
    for run_id in [root.id, *orchestrators, *grandchildren]:
        run = service.load(run_id)
        assert (run.status, run.outcome) == (RunStatus.CANCELLED, 20), run_id


def test_a_replayed_reaction_starts_no_child_twice(ctx: Context) -> None:
    service = RunService(ctx)
    root = service.start(RunRequest("chapter_revision", {}, is_recipe_id=True), owner="o")
    root = asyncio.run(service.execute(root))
    request = next(e for e in _events(ctx, root.id) if isinstance(e, ChildRunsRequested))
    policy = ChildRunsPolicy()
    for _ in range(2):  # the reaction, then the same reaction again (as after a crash)
        unit = Unit(ctx.store)
        policy.react(request, unit)
        for aggregate in unit.changed:
            ctx.store.save(aggregate)
    parent = service.load(root.id)
    assert len(children_of(parent)) == 1
    assert len(parent.journal_of("consistency", ChildRunStarted)) == 1


def _events(ctx: Context, run_id: str) -> list[DomainEvent]:
    return ctx.store.stream(run_id)


# -- the CLI ------------------------------------------------------------------------------------


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-w", str(workspace), timeout=120)


@pytest.mark.timeout(180)
def test_the_cli_exits_with_the_trees_outcome_code(workspace: Path) -> None:
    done = _cli(workspace, "run", "chapter_revision", "--arg", "scene_number=1", "-q")
    assert done.returncode == 0, done.stderr
    depth = _cli(workspace, "run", "manuscript_revision", "--arg", "max_depth=1", "-q")
    assert depth.returncode == 2, depth.stderr
    assert "DEPTH_EXCEEDED" in depth.stdout + depth.stderr


@pytest.mark.timeout(180)
def test_show_lists_the_children_and_the_trees_totals_the_same_both_ways(
    workspace: Path,
) -> None:
    ran = _cli(workspace, "run", "manuscript_revision", "-q", "--json")
    assert ran.returncode == 12, ran.stderr  # a chapter's consistency check fails its DoD
    root = json.loads(ran.stdout)["run_id"]
    quick = _cli(workspace, "show", root)
    full = subprocess.run(
        [CLI, "show", root, "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CONTROLROOM_QUICK_READS": "0"},
        check=False,
    )
    assert quick.stdout == full.stdout and quick.returncode == full.returncode == 0
    lines = quick.stdout.splitlines()
    children = [line for line in lines if line.strip().startswith("child ")]
    assert len(children) == 4  # three chapters, one of them run twice
    assert any(
        "chapter_revision  failed FAILURE" in line and "attempt 2" in line for line in children
    )
    tree = next(line for line in lines if line.startswith("tree: "))
    assert tree.startswith("tree: 13 runs, 2 level(s) below")  # 1 + 4 chapters + 8 stages
    assert "outcome: 12 PARTIAL_SUCCESS" in quick.stdout
    detail = json.loads(_cli(workspace, "show", root, "--json").stdout)
    assert detail["tree"]["runs"] == 13 and detail["tree"]["deepest"] == 2
    child = json.loads(_cli(workspace, "show", detail["children"][0]["run_id"], "--json").stdout)
    assert child["parent"] == {
        "run_id": root,
        "instance_id": "chapters",
        "root_run_id": root,
        "depth": 1,
        "max_depth": 3,
    }


@pytest.mark.timeout(120)
def test_a_tree_started_over_http_runs_in_the_server(workspace: Path) -> None:
    import httpx

    from tests.live import live_server, read_sse

    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        started = client.post(
            "/api/runs", json={"recipe_id": "chapter_revision", "args": {"scene_number": 1}}
        )
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        live_tree = read_sse(client, f"/api/runs/{run_id}/events?tree=1")
        feed = read_sse(client, f"/api/runs/{run_id}/events")
        assert feed[-1]["event"] == "RunCompleted"
        # The tree's feed: the root's events and its children's, in log order, ending
        # with the root's; followed live or read back once finished, the same events.
        history_tree = read_sse(client, f"/api/runs/{run_id}/events?tree=1")
        stored = [m["id"] for m in live_tree if "id" in m]  # partial model text has no id
        assert stored == [m["id"] for m in history_tree if "id" in m]
        positions = [int(m["id"]) for m in history_tree if "id" in m]
        assert positions == sorted(set(positions))
        runs = {m["data"]["run_id"] for m in history_tree if "id" in m}
        assert len(runs) == 3 and run_id in runs
        assert history_tree[-1]["event"] == "RunCompleted"
        assert history_tree[-1]["data"]["run_id"] == run_id
        view = client.get(f"/api/runs/{run_id}").json()
        assert view["outcome"] == 0
        assert [c["recipe_id"] for c in view["children"]] == [
            "analytical_consistency",
            "analytical_prose",
        ]
        assert all(c["outcome"] == 0 for c in view["children"])
        assert view["tree"]["runs"] == 3


@pytest.mark.timeout(120)
def test_a_worker_runs_a_queued_tree_to_its_end(ctx: Context) -> None:
    from controlroom.engine.worker import Worker

    service = RunService(ctx)
    root = service.start(RunRequest("chapter_revision", {"scene_number": 1}, is_recipe_id=True))
    views = Views.for_store(ctx.store, ctx.workspace.root)
    followers = Followers(ctx.store, views)

    def unfinished() -> list[str]:
        return [r.run_id for r in views.query.runs(status="running")]

    async def work() -> None:
        worker = Worker(ctx, unfinished, followers, concurrency=4, poll_s=0.05)
        stop = asyncio.Event()

        async def until_done() -> None:
            while not service.load(root.id).is_finished:
                await asyncio.sleep(0.05)
            stop.set()

        await asyncio.gather(worker.run(stop), until_done())

    asyncio.run(asyncio.wait_for(work(), 100))
    done = service.load(root.id)
    assert (done.status, done.outcome) == (RunStatus.DONE, 0)
    assert len(children_of(done)) == 2


class _LaterClock:
    """The system's time, moved on by `ahead` seconds once asked to."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def now(self) -> Any:
        from datetime import UTC, datetime, timedelta

        return datetime.now(UTC) + timedelta(seconds=self.ahead)


def test_a_child_past_its_deadline_ends_timeout_and_the_code_travels_up(
    workspace: Path,
) -> None:
    steps = [
        {
            "kind": "child_run",
            "step_id": "stage",
            "recipe": "analytical_prose",
            "timeout_s": 60,
            "output_slot": "stage",
        }
    ]
    write_override(
        workspace, "tree_test.json", json.dumps({"recipe_id": "tree_test", "phase_b": steps})
    )
    ctx = Context.open(workspace)
    try:
        clock = _LaterClock()
        ctx.clock = clock  # type: ignore[misc]
        service = RunService(ctx)
        root = service.start(RunRequest("tree_test", {}, is_recipe_id=True), owner="o")
        root = asyncio.run(service.execute(root))
        followers = Followers(ctx.store, Views.for_store(ctx.store, ctx.workspace.root))
        followers.catch_up()  # the child is started, with a deadline a minute from now
        (child_id,) = children_of(service.load(root.id))
        child = service.load(child_id)
        assert child.origin.deadline is not None
        clock.ahead = 120  # two minutes later, before the child has done anything
        root = asyncio.run(drive_tree(ctx, service.load(root.id), followers, "o"))
        child = service.load(child_id)
        assert (child.status, child.outcome) == (RunStatus.FAILED, 21)
        assert "deadline" in (child.error or "")
        assert (root.status, root.outcome) == (RunStatus.FAILED, 21)
    finally:
        ctx.close()


def test_a_tree_over_its_budget_stops_before_the_next_model_call(ctx: Context) -> None:
    from controlroom.domain.run_events import AgentResponded
    from controlroom.engine.tree_budget import tree_spend

    root = _drive(ctx, "chapter_revision", scene_number=1, budget_tokens=1)
    assert (root.status, root.outcome) == (RunStatus.FAILED, 11)
    assert "budget of run tree" in (root.error or "")
    assert f"controlroom fork {root.id} --from STEP --arg budget_usd=N" in (root.error or "")
    tree = list(tree_runs(ctx.store, root))
    replies = [e for r in tree for e in ctx.store.stream(r.id) if isinstance(e, AgentResponded)]
    # The first call spent the budget; none was made after it (tree-wide, across runs).
    assert len(replies) == 1
    assert tree_spend(ctx.store, root, root).tokens > 1
    stopped = next(r for r in tree if r.outcome == 11 and r.id != root.id)
    assert stopped.recipe is not None and stopped.recipe.recipe_id == "analytical_consistency"


@pytest.mark.timeout(120)
def test_a_tree_exports_as_seed_004s_session_directory(ctx: Context, tmp_path: Path) -> None:
    from controlroom.projections.tree_export import export_tree

    root = _drive(ctx, "manuscript_revision")
    folder = tmp_path / "session"
    export_tree(ctx.store, root, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["root_run_id"] == root.id and manifest["outcome_name"] == "PARTIAL_SUCCESS"
    assert len(manifest["runs"]) == 13
    assert (folder / ".trace").read_text().strip() == root.trace_id
    signals = sorted(p.name for p in (folder / ".signals").iterdir())
    assert len(signals) == 12  # every run below the root
    assert sum(s.startswith("orch-") for s in signals) == 4  # the coordinator's chapters
    assert sum(s.endswith(".fail") for s in signals) == 6  # 2 chapter runs, 4 stages
    first = (folder / ".signals" / signals[0]).read_text()
    assert 'status: "' in first and f'trace_id: "{root.trace_id}"' in first
    live = (folder / ".live-report").read_text().splitlines()
    assert len(live) == sum(len(ctx.store.stream(r.id)) for r in tree_runs(ctx.store, root))
    phases = sorted(p.name for p in (folder / "phases").iterdir())
    assert len(phases) == 12 and all((folder / "phases" / p / "run.json").exists() for p in phases)


def test_a_grandchild_needing_refinement_travels_up_by_the_table(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """campaign-less tree: coordinator -> orchestrator -> a sentinel loop that cannot
    improve (10). The orchestrator re-raises 10; the coordinator re-invokes it once with
    the resolution; the second 10 is re-raised to the root."""
    from controlroom.models import offline_roles

    models = {
        "providers": {
            "offline": {"type": "offline", "faults": {"careless-1": {"fault": "contradict_canon"}}}
        },
        "roles": {"writer": {"provider": "offline", "model": "careless-1"}},
    }
    (workspace / ".control-room").mkdir(exist_ok=True)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(models))
    monkeypatch.setitem(
        offline_roles.HANDLERS, "apply_fix_list", lambda task, inputs: dict(inputs)["text"]
    )
    stage = {"kind": "child_run", "step_id": "stage", "recipe": "verified_draft_scene"}
    orchestrator = {"recipe_id": "orch_test", "phase_b": [{**stage, "output_slot": "stage"}]}
    chapters = {
        "kind": "child_run",
        "step_id": "chapters",
        "recipe": "orch_test",
        "layer": "coordinator",
        "output_slot": "chapters",
    }
    coordinator = {"recipe_id": "coord_test", "phase_b": [chapters]}
    write_override(workspace, "orch_test.json", json.dumps(orchestrator))
    write_override(workspace, "coord_test.json", json.dumps(coordinator))
    ctx = Context.open(workspace)
    try:
        root = _drive(ctx, "coord_test")
        tree = list(tree_runs(ctx.store, root))
        orchestrators = [r for r in tree if r.origin.depth == 1]
        loops = [r for r in tree if r.origin.depth == 2]
        assert [r.outcome for r in loops] == [10, 10]
        assert [r.outcome for r in orchestrators] == [10, 10]  # re-raised, not retried
        first, second = orchestrators
        assert "resolution" not in first.task.args
        assert "needs refinement" in str(second.task.args["resolution"])  # re-invoked with it
        assert (root.status, root.outcome) == (RunStatus.FAILED, 10)
    finally:
        ctx.close()
