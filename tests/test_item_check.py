"""The playbook's per-beat check (issue 26, item 6): a beat its continuity check rejects is
written again with the findings, at most `max_revisions` times, then the step's ladder."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.packet_steps import ForEachItemChecked, ForEachItemDrafted
from controlroom.domain.run import RunStatus
from controlroom.domain.run_events import RunStarted, StepCompleted
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli

TASK = "write scene 4 beat by beat"


def careless(until_feedback: bool, **writer: Any) -> dict[str, Any]:
    fault = {"fault": "contradict_canon", "until_feedback": until_feedback}
    return {
        "providers": {"offline": {"type": "offline", "faults": {"careless-1": fault}}},
        "roles": {"writer": {"provider": "offline", "model": "careless-1", **writer}},
    }


def run_playbook(workspace: Path, models: dict[str, Any]) -> tuple[Any, list[Any]]:
    (workspace / ".control-room").mkdir(exist_ok=True)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(models))
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest(TASK, {}))))
        return run, list(ctx.store.stream(run.id))
    finally:
        ctx.close()


def test_a_beat_the_check_rejects_is_written_again_with_the_findings(workspace: Path) -> None:
    run, events = run_playbook(workspace, careless(until_feedback=True))
    assert run.status == RunStatus.DONE, run.error
    checks = [e for e in events if isinstance(e, ForEachItemChecked)]
    assert [(c.index, c.attempt, c.passed) for c in checks] == [
        (0, 1, False), (0, 2, True), (1, 1, False), (1, 2, True), (2, 1, False), (2, 2, True),
    ]  # fmt: skip
    assert "canon 'grey'" in checks[0].findings[0]
    drafts = [e for e in events if isinstance(e, ForEachItemDrafted)]
    assert "violet" in drafts[0].output and "violet" not in drafts[1].output
    scene = (workspace / "Story" / "Scenes" / "SCN-04-the-reckoning.md").read_text()
    assert "violet" not in scene  # the revised beats are what was written


def test_a_beat_still_rejected_after_its_revisions_climbs_the_writers_ladder(
    workspace: Path,
) -> None:
    chain = [{"provider": "offline", "model": "offline-deterministic-1"}]
    run, events = run_playbook(workspace, careless(until_feedback=False, escalation=chain))
    assert run.status == RunStatus.DONE, run.error
    rungs = [e.rung for e in events if isinstance(e, FlowDecided) and e.rung]
    assert [r["kind"] for r in rungs] == ["escalate"]
    assert rungs[0]["failure_kind"] == "gate" and "item 1's check" in rungs[0]["failure"]
    first = [
        e for e in events if isinstance(e, ForEachItemChecked) and e.instance_id == "write_beats"
    ]
    assert [c.attempt for c in first] == [1, 2, 3]  # max_revisions 2


def test_without_a_ladder_the_run_fails_as_needing_refinement(workspace: Path) -> None:
    run, _ = run_playbook(workspace, careless(until_feedback=False))
    assert run.status == RunStatus.FAILED and run.outcome == 10, run.error


@pytest.mark.e2e
@pytest.mark.timeout(600)
@pytest.mark.long
def test_a_kill_after_any_commit_of_a_revising_loop_never_asks_twice(tmp_path: Path) -> None:
    models = json.dumps(careless(until_feedback=True))
    # Every third commit: the loop's commits alternate draft, check and item, so each kind
    # of commit is a crash point (the ladder's crash matrix covers every commit of its run).
    points, problems, n = 0, [], -1
    while True:
        n += 3
        ws = tmp_path / f"ws-{n}"
        shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
        (ws / ".control-room").mkdir(exist_ok=True)
        (ws / ".control-room" / "models.json").write_text(models)
        killed = cli("run", TASK, "-w", str(ws), "-q",
                     env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)})  # fmt: skip
        if killed.returncode != -9:
            assert killed.returncode == 0, killed.stderr
            break
        points += 1
        ctx = Context.open(ws)
        started = any(isinstance(p.event, RunStarted) for p in ctx.store.read_log())
        ctx.close()
        again = cli(
            "resume" if started else "run", *([] if started else [TASK]), "-w", str(ws), "-q"
        )
        assert again.returncode == 0, again.stderr
        ctx = Context.open(ws)
        events = [p.event for p in ctx.store.read_log()]
        ctx.close()
        keys = Counter(
            (type(e).__name__, e.instance_id, e.index, e.attempt)
            for e in events
            if isinstance(e, ForEachItemDrafted | ForEachItemChecked)
        )
        completed = Counter(e.instance_id for e in events if isinstance(e, StepCompleted))
        if any(c > 1 for c in keys.values()) or any(c > 1 for c in completed.values()):
            problems.append(f"N={n}: asked twice {keys} {completed}")
        if len([k for k in keys if k[0] == "ForEachItemChecked"]) != 6:
            problems.append(f"N={n}: {len(keys)} drafts and checks")
        shutil.rmtree(ws)
    assert points > 5
    assert not problems, "\n".join(problems)
