"""Every model call is in the log once, with what it cost, wherever it was made: a recipe's
steps (T1 micro-calls and a loop's items included), the Chief planning and reviewing, a
conference's Chief and roles. The analytics `agent_calls` table counts each of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.events import ModelReplyEvent
from controlroom.domain.packet_steps import ForEachItemCompleted
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.plan_driver import drive
from controlroom.engine.plans import PlanService
from controlroom.engine.reviews import review_run_id
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.config import OFFLINE_MODEL, load_models_config
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from controlroom.projections.analytics import AnalyticsProjection

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}


class CountingModel:
    """The offline model, counting every request it answers."""

    def __init__(self) -> None:
        self.inner = OfflineModel.from_env()
        self.provider = "priced"
        self.calls = 0

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return self.inner.request_body(request)

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.calls += 1
        return await self.inner.complete(request, on_text)


@pytest.fixture
def priced(workspace: Path) -> tuple[Context, CountingModel]:
    config = {
        "providers": {"priced": {"type": "offline", "prices": {OFFLINE_MODEL: PRICE}}},
        "default": {"provider": "priced", "model": OFFLINE_MODEL, "tier": "t3"},
        "roles": {"continuity": {"provider": "priced", "model": OFFLINE_MODEL, "tier": "t1"}},
    }
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(config))
    model = CountingModel()
    agents = AgentDirectory(load_models_config(workspace), {"priced": model})
    return Context.open(workspace, agents=agents), model


def recorded_calls(ctx: Context, aggregate_id: str) -> tuple[int, float]:
    """Calls and their cost, as the aggregate's events of the one family record them (a
    loop's last item is the step's own `AgentResponded`, so it is not counted twice)."""
    count, cost = 0, 0.0
    for event in ctx.store.stream(aggregate_id):
        if not isinstance(event, ModelReplyEvent):
            continue
        if isinstance(event, ForEachItemCompleted) and (
            event.index == event.total - 1 or event.checked
        ):
            continue
        if getattr(event, "repeats_items", False):
            continue  # a checked loop's step reply repeats its last accepted draft
        count += 1
        cost += event.call().cost_usd or 0.0
    return count, round(cost, 9)


def test_every_call_of_a_run_a_plan_and_a_conference_is_counted_with_its_cost(
    priced: tuple[Context, CountingModel],
) -> None:
    ctx, model = priced
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("write scene 4 beat by beat", {}))))
    assert run.status.value == "done", run.error
    after_run = model.calls

    plans = PlanService(ctx)
    plan = asyncio.run(plans.create("Check the scenes for canon errors"))
    plans.approve(plan.id)
    plans.start(plan.id)
    plan = asyncio.run(drive(ctx, plan.id, Followers(ctx.store)))
    after_plan = model.calls

    conference = asyncio.run(
        ConferenceService(ctx).run(
            RoundRequest("Is Kael consistent with his canon card?", ["continuity", "critic"], [])
        )
    )
    after_round = model.calls

    # The plan's task runs, and the Chief's review run of each task (runs of their own).
    reviews = [review_run_id(plan.id, task_id, 1) for task_id in plan.run_ids]
    plan_runs = [*plan.run_ids.values(), *reviews]
    with AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root) as analytics:
        analytics.catch_up()
        rows = analytics.query(
            "SELECT run_id, count(*) AS calls, round(sum(cost_usd), 9) AS cost "
            "FROM agent_calls GROUP BY run_id"
        ).rows
    counted = {row[0]: (row[1], row[2]) for row in rows}

    ids = [run.id, plan.id, *plan_runs, conference.id]
    for aggregate_id in ids:
        calls, cost = recorded_calls(ctx, aggregate_id)
        assert calls > 0, aggregate_id
        assert counted[aggregate_id] == (calls, cost), aggregate_id
        assert cost > 0, aggregate_id  # every call priced, the Chief's too
    # Every request the model answered is a row: nothing is made off the record.
    assert counted[run.id][0] == after_run
    plan_calls = sum(counted[i][0] for i in (plan.id, *plan_runs))
    assert plan_calls == after_plan - after_run
    assert counted[conference.id][0] == after_round - after_plan
    assert set(counted) == set(ids)
    ctx.close()


def test_every_event_that_records_a_model_reply_is_of_the_one_family() -> None:
    from controlroom.domain.conference import AgentCallRecorded
    from controlroom.domain.model_calls import ModelCalled
    from controlroom.domain.run_events import AgentMicroStepResponded, AgentResponded

    for kind in (
        AgentResponded,
        AgentMicroStepResponded,
        ForEachItemCompleted,
        AgentCallRecorded,
        ModelCalled,
    ):
        assert issubclass(kind, ModelReplyEvent), kind
        assert kind.call is not ModelReplyEvent.call, kind  # each reads its own shape
