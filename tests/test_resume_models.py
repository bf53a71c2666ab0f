"""A run goes on with the models it started with: a resumed or retried run is served by the
model each role had at its start, whatever the settings say by then (a
`CONTROLROOM_MODEL_<ROLE>` given to the first process only), so its final state is an
uninterrupted run's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from controlroom.domain.run_events import AgentResponded, RunRetried, RunStarted
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService


def _a_second_offline_model(workspace: Path) -> None:
    """`offline:terse-1` beside the deterministic model (its replies are prose)."""
    models = {
        "providers": {"offline": {"type": "offline", "faults": {"terse-1": {"fault": "prose"}}}}
    }
    (workspace / ".control-room").mkdir(exist_ok=True)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(models))


def test_a_resumed_run_is_served_by_the_models_it_started_with(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _a_second_offline_model(workspace)
    monkeypatch.setenv("CONTROLROOM_MODEL_WRITER", "offline:terse-1")
    ctx = Context.open(workspace)
    try:
        run = RunService(ctx).start(RunRequest("creative_draft_scene", {"scene_number": 4}))
        started = next(e for e in ctx.store.stream(run.id) if isinstance(e, RunStarted))
        assert started.models["writer"] == "offline:terse-1"
        assert started.models["editor"] == "offline:offline-deterministic-1"
    finally:
        ctx.close()
    # the next process has no such setting: the run still goes on with terse-1
    monkeypatch.delenv("CONTROLROOM_MODEL_WRITER")
    ctx = Context.open(workspace)
    try:
        final = asyncio.run(RunService(ctx).resume(run.id))
        assert final.status.value == "done", final.error
        replies = [e for e in ctx.store.stream(run.id) if isinstance(e, AgentResponded)]
        served = {e.agent_archetype: e.model for e in replies}
        assert served["writer"] == "terse-1"
        assert {m for role, m in served.items() if role != "writer"} == {"offline-deterministic-1"}
    finally:
        ctx.close()


def test_a_retry_takes_the_models_as_the_settings_are_now(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _a_second_offline_model(workspace)
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        # scene 3 is written already: the run fails in phase A, before any model call
        run = service.start(RunRequest("creative_draft_scene", {"scene_number": 3}))
        failed = asyncio.run(service.execute(run))
        assert failed.status.value == "failed"
        assert failed.models["writer"] == "offline:offline-deterministic-1"
    finally:
        ctx.close()
    # the user changed the writer's model, then retried: the retry is served by the new one
    monkeypatch.setenv("CONTROLROOM_MODEL_WRITER", "offline:terse-1")
    ctx = Context.open(workspace)
    try:
        retried = RunService(ctx).retry(run.id)
        assert retried.models["writer"] == "offline:terse-1"
        (event,) = [e for e in ctx.store.stream(run.id) if isinstance(e, RunRetried)]
        assert event.models["writer"] == "offline:terse-1"
    finally:
        ctx.close()
