"""`diff`: two runs compared step by step from their events."""

from __future__ import annotations

import asyncio

from controlroom.engine.context import Context
from controlroom.engine.run_diff import diff_runs
from controlroom.engine.service import RunRequest, RunService


def test_a_run_against_itself_differs_nowhere_and_its_totals_count_every_call(
    ctx: Context, service: RunService
) -> None:
    run = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    diff = diff_runs(service, run.id, run.id)
    assert [s.step for s in diff.steps][:3] == ["discover", "analyze_outline", "check_canon"]
    assert not [s.step for s in diff.steps if s.changed]
    assert diff.totals_a == diff.totals_b and diff.totals_a["calls"] == 5
    assert diff.totals_a["input_tokens"] > 0
    critique = next(s for s in diff.steps if s.step == "critique")
    assert critique.a is not None and "score" in critique.a.verdicts
    gate = next(s for s in diff.steps if s.step == "critic_gate")
    assert gate.a is not None and gate.a.verdicts["verdict"] == "PASS"
    assert diff.dod_a and all(diff.dod_a.values())
    report = diff.to_json()
    assert report["totals"]["a"] == diff.totals_a and len(report["steps"]) == 11


def test_two_runs_given_another_task_differ_in_the_requests_that_carry_it(
    ctx: Context, service: RunService
) -> None:
    first = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    ctx.workspace.root.joinpath("Story", "Scenes", "SCN-04-the-reckoning.md").unlink()
    second = asyncio.run(
        service.execute(
            service.start(RunRequest("creative_draft_scene", {}, description="Another task"))
        )
    )
    diff = diff_runs(service, first.id, second.id)
    changed = {s.step: s for s in diff.steps if s.changed}
    assert "brief" in changed and "Another task" in changed["brief"].request_diff
    assert "-# Task\n+# Task" not in changed["brief"].request_diff  # lines, not a blob
    assert changed["brief"].a is not None and changed["brief"].b is not None
    assert changed["brief"].a.request_ref != changed["brief"].b.request_ref
