"""Iterations (issue 26, item 7): a pipeline recipe run again on the same target is its next
iteration; each is archived with what it deferred and relaxed and its gap analysis, and the
next iteration's first step receives them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from controlroom.domain.iteration import Iteration, iteration_id, target_of
from controlroom.domain.run import Run, RunStatus
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.views import Views

PIPELINE = "revision_pass"
#: The editor answers prose: the review gate rejects its corrections twice, its ladder's
#: triage (offline) defers the step, and the run ends a partial success.
SLOPPY_EDITOR = {
    "providers": {"offline": {"type": "offline", "faults": {"sloppy-1": {"fault": "prose"}}}},
    "roles": {
        "editor": {
            "provider": "offline",
            "model": "sloppy-1",
            "triage": {"provider": "offline", "model": "offline-deterministic-1"},
        }
    },
}


def run_pipeline(workspace: Path) -> Run:
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest(PIPELINE, {}))))
        views = Views.for_store(ctx.store, ctx.workspace.root)
        Followers(ctx.store, views).catch_up()  # the archive policy reacts
        views.close()
        return run
    finally:
        ctx.close()


def slot_json(run: Run, slot: str) -> dict[str, object]:
    value = json.loads(run.slot_texts[slot])
    assert isinstance(value, dict)
    return value


def test_the_target_names_the_recipe_and_its_key_args() -> None:
    assert target_of("revision_pass", [], {"x": 1}) == "revision_pass"
    keyed = target_of("p", ["scene_number"], {"scene_number": 4, "other": 1})
    assert keyed == 'p {"scene_number":4}'
    assert iteration_id(keyed) != iteration_id(
        target_of("p", ["scene_number"], {"scene_number": 5})
    )


def test_archiving_is_idempotent_and_numbers_iterations_in_order() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    it = Iteration.for_target("t")
    assert it.archive(at, recipe_id="r", run_id="run_a", result="done")
    assert not it.archive(at, recipe_id="r", run_id="run_a", result="done")
    assert it.archive(at, recipe_id="r", run_id="run_b", result="partial")
    assert [a.number for a in it.archived] == [1, 2]
    assert it.number_of("run_c") == 3 and it.previous_to("run_b") is it.archived[0]
    # a retried run that ends again keeps its number
    assert it.archive(at, recipe_id="r", run_id="run_a", result="failed")
    assert [(a.run_id, a.number) for a in it.archived] == [("run_a", 1), ("run_b", 2)]


def test_a_second_iteration_receives_the_first_ones_deferrals_and_gap_analysis(
    workspace: Path,
) -> None:
    config = workspace / ".control-room" / "models.json"
    config.parent.mkdir(exist_ok=True)
    config.write_text(json.dumps(SLOPPY_EDITOR))
    first = run_pipeline(workspace)
    assert first.status == RunStatus.DONE and first.outcome == 12, first.error
    record = slot_json(first, "iteration_record")
    (deferred,) = record["deferred"]  # type: ignore[misc]
    assert deferred["step_id"] == "revise" and deferred["skipped"] == ["revise", "review"]
    gap = first.slot_texts["gap_analysis"]
    assert "Addressed: 0 of 1" in gap and "deferred step revise" in gap

    config.unlink()  # the editor is mended: the second iteration
    second = run_pipeline(workspace)
    assert second.status == RunStatus.DONE and second.outcome == 0, second.error
    context = slot_json(second, "iteration")
    assert context["iteration"] == 2
    previous = context["previous"]
    assert isinstance(previous, dict)
    assert previous["number"] == 1 and previous["result"] == "partial"
    assert previous["deferred"][0]["step_id"] == "revise"
    assert previous["gap_analysis"] == gap
    brief = second.slot_texts["revision_brief"]
    assert "iteration 2" in brief and "Deferred then, to take up now: revise" in brief
    assert "Addressed: 1 of 1" in second.slot_texts["gap_analysis"]

    ctx = Context.open(workspace)
    iteration = ctx.store.load(Iteration, iteration_id(PIPELINE))
    ctx.close()
    assert iteration is not None
    assert [(a.number, a.result) for a in iteration.archived] == [(1, "partial"), (2, "done")]
    assert iteration.archived[0].rungs["rollback"] == 2
    # the archive, made when the run ended, counts the steps passed over after the record
    assert "write_corrections" in iteration.archived[0].deferred[0]["skipped"]
    assert (workspace / "control-room-reports" / "revision" / "GAP_ANALYSIS.md").exists()
