"""Session plans through the CLI: the whole flow as a user types it, bad input, and a SIGKILL
of the process running the plan after any commit, then `plan resume`: every task run once."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from controlroom.domain.plan_events import TaskRunRequested
from controlroom.domain.run_events import RunStarted, StepCompleted
from controlroom.engine.context import Context
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e
SEED_LIKE = (
    "Write scene 4, then check consistency of scenes 3-4 against canon, and a foreshadowing audit"
)


def create(ws: str, intent: str = SEED_LIKE) -> str:
    created = cli("plan", "create", intent, "-w", ws, "--json")
    assert created.returncode == 0, created.stderr
    plan_id: str = json.loads(created.stdout)["plan_id"]
    return plan_id


def test_a_user_plans_approves_runs_answers_and_finishes_from_the_cli(workspace: Path) -> None:
    ws = str(workspace)
    plan_id = create(ws)
    shown = cli("plan", "show", plan_id, "-w", ws)
    assert "needs_scoping" in shown.stdout and f"plan approve {plan_id}" in shown.stdout
    refused = cli("plan", "start", plan_id, "-w", ws)
    assert refused.returncode == 64 and "approve it first" in refused.stderr
    assert cli("plan", "approve", plan_id, "-w", ws).returncode == 0
    started = cli("plan", "start", plan_id, "-w", ws)
    assert started.returncode == 0, started.stderr
    assert "task 2 done" in started.stderr  # live progress, one line per change
    assert "waiting for your answer" in started.stdout
    answered = cli("plan", "answer", plan_id, "3", "scenes 1-4, the ledger page", "-w", ws)
    assert answered.returncode == 0, answered.stderr
    finished = cli("plan", "resume", plan_id, "-w", ws, "--json")
    assert finished.returncode == 0, finished.stderr
    plan = json.loads(finished.stdout)
    assert plan["status"] == "done"
    assert [t["state"] for t in plan["tasks"]] == ["done", "done", "done"]
    assert list((workspace / "Story" / "Scenes").glob("SCN-04-*"))
    listed = cli("plan", "list", "-w", ws)
    assert plan_id in listed.stdout and "3/3 done" in listed.stdout
    exported = cli("plan", "export", plan_id, "--dir", str(workspace / "out"), "-w", ws)
    assert exported.returncode == 0, exported.stderr
    (document,) = (workspace / "out" / "sessions").glob("*/plan.json")
    appendix_g = json.loads(document.read_text())
    assert appendix_g["created_by"] == "chief" and appendix_g["status"] == "done"
    assert [t["status"] for t in appendix_g["tasks"]] == ["done", "done", "done"]
    assert appendix_g["tasks"][1]["deps"] == [1] and appendix_g["tasks"][0]["run_id"]


def test_bad_plan_commands_are_refused_with_a_message_and_exit_64(workspace: Path) -> None:
    ws = str(workspace)
    plan_id = create(ws)
    cases = [
        (("plan", "reorder", plan_id, "2,1,3"), "cannot come before"),
        (("plan", "remove", plan_id, "1"), "--cascade"),
        (("plan", "answer", plan_id, "1", "x"), "no scoping question"),
        (("plan", "answer", plan_id, "7", "x"), "no task 7"),
        (("plan", "force-start", plan_id, "2"), "cannot force-start"),
        (("plan", "show", "plan_missing"), "no plan 'plan_missing'"),
        (("plan", "pause", plan_id), "cannot pause"),
        (("plan", "edit", plan_id, "x"), "TASK must be a task number"),
    ]
    for args, message in cases:
        result = cli(*args, "-w", ws)
        assert result.returncode == 64, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    removed = cli("plan", "remove", plan_id, "1", "--cascade", "-w", ws, "--json")
    assert [t["task_id"] for t in json.loads(removed.stdout)["tasks"]] == [3]


def _runs(workspace: Path) -> tuple[Counter[str], Counter[str], list[int]]:
    ctx = Context.open(workspace)
    try:
        events = [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()
    # Task runs: the Chief's review runs (recipe plan_task_review) are counted apart.
    started = Counter(
        e.originator_id
        for e in events
        if isinstance(e, RunStarted) and e.recipe_id != "plan_task_review"
    )
    steps = Counter(
        f"{e.originator_id}:{e.instance_id or e.step_id}"
        for e in events
        if isinstance(e, StepCompleted)
    )
    requested = [e.task_id for e in events if isinstance(e, TaskRunRequested)]
    return started, steps, requested


def _reviews(workspace: Path) -> Counter[str]:
    """The Chief's review runs, by id: each task's review started once."""
    ctx = Context.open(workspace)
    try:
        return Counter(
            p.event.originator_id
            for p in ctx.store.read_log()
            if isinstance(p.event, RunStarted) and p.event.recipe_id == "plan_task_review"
        )
    finally:
        ctx.close()


@pytest.mark.timeout(600)
@pytest.mark.long
def test_a_plan_killed_after_any_commit_resumes_with_every_task_run_once(tmp_path: Path) -> None:
    intent = "Validate scene 3 against the outline, then check consistency of scene 3"
    # The plan is made and approved once; each crash point starts from a copy of that
    # workspace (its store holds the approved plan), so only `start` and `resume` repeat.
    template = tmp_path / "approved"
    shutil.copytree(EXAMPLE, template, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    plan_id = create(str(template), intent)
    assert cli("plan", "approve", plan_id, "-w", str(template)).returncode == 0
    n = 0
    while True:
        n += 1
        workspace = tmp_path / f"ws-{n}"
        shutil.copytree(template, workspace)
        ws = str(workspace)
        killed = cli(
            "plan", "start", plan_id, "-w", ws, env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)}
        )
        if killed.returncode != -9:
            assert killed.returncode in (0, 1), killed.stderr
            break  # past the last commit
        resumed = cli("plan", "resume", plan_id, "-w", ws, "--json")
        assert resumed.returncode in (0, 1), (n, resumed.stderr)
        plan = json.loads(resumed.stdout)
        assert plan["status"] in ("done", "failed"), (n, plan)
        started, steps, requested = _runs(workspace)
        assert sorted(requested) == [1, 2], (n, requested)  # each task asked for once
        assert len(started) == 2 and set(started.values()) == {1}, (n, started)
        assert [k for k, c in steps.items() if c > 1] == [], n
        reviews = _reviews(workspace)
        assert len(reviews) == 2 and set(reviews.values()) == {1}, (n, reviews)
        shutil.rmtree(workspace)
    assert n > 5, "the plan was never killed"


def test_a_task_added_to_a_plan_is_routed_and_waits_for_the_last_task(workspace: Path) -> None:
    ws = str(workspace)
    plan_id = create(ws, "Validate scene 3 against the outline")
    added = cli("plan", "add", plan_id, "style tune-up of scene 3", "-w", ws, "--json")
    assert added.returncode == 0, added.stderr
    tasks = json.loads(added.stdout)["tasks"]
    assert tasks[-1]["recipe_id"] == "loop_style_tune_up"
    assert tasks[-1]["deps"] == [tasks[-2]["task_id"]]
    alone = cli("plan", "add", plan_id, "style tune-up", "--after", "", "-w", ws, "--json")
    assert alone.returncode == 0 and json.loads(alone.stdout)["tasks"][-1]["deps"] == []
    empty = cli("plan", "add", plan_id, "-w", ws)
    assert empty.returncode == 64 and "DESCRIPTION" in empty.stderr
    bad = cli("plan", "add", plan_id, "x", "--after", "9", "-w", ws)
    assert bad.returncode == 64 and "no task 9" in bad.stderr
