"""A fork's cost is what it paid: its copies of its source's steps were paid by the source
(issue 31). The run view, the run page's state, `show`, the fork family's totals and
analytics all count each reply once, where it was paid."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from controlroom.api.run_page import run_state
from controlroom.domain.events import DomainEvent
from controlroom.domain.run_events import RunForked, RunStarted, StepStarted
from controlroom.engine.context import Context
from controlroom.engine.fork import ForkRequest, fork
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.config import OFFLINE_MODEL
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.run_tree import eval_totals, family_totals, own_tokens
from controlroom.projections.run_view import RunView, build_run_view
from controlroom.projections.views import Views

CLI = str(Path(sys.executable).parent / "controlroom")
SCENE = Path("Story") / "Scenes" / "SCN-04-the-reckoning.md"
PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
#: The events a run's view charges to the run: every reply paid for.
CHARGED = {
    "AgentResponded", "AgentReplyRejected", "LadderCallRecorded", "ForEachItemDrafted",
    "ForEachItemChecked",
}  # fmt: skip


@pytest.fixture
def priced(workspace: Path) -> Iterator[Context]:
    """The workspace's offline model, priced: every reply has a cost."""
    config = {
        "providers": {"priced": {"type": "offline", "prices": {OFFLINE_MODEL: PRICE}}},
        "default": {"provider": "priced", "model": OFFLINE_MODEL, "tier": "t3"},
    }
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(config))
    ctx = Context.open(workspace)  # `priced` is an offline client, made from the config
    yield ctx
    ctx.close()


def cost_of(events: list[DomainEvent]) -> float:
    total = 0.0
    for event in events:
        if event.type_name in CHARGED and not getattr(event, "repeats_items", False):
            total += getattr(event, "cost_usd", None) or 0.0
    return round(total, 9)


def source_and_fork(ctx: Context, workspace: Path) -> tuple[str, str]:
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    assert run.status == "done", run.error
    (workspace / SCENE).unlink()  # the fork writes the scene again
    forked = asyncio.run(fork(ctx, ForkRequest(run.id, "polish")))
    assert forked.status == "done", forked.error
    return run.id, forked.id


def split(ctx: Context, fork_id: str) -> tuple[list[DomainEvent], list[DomainEvent]]:
    """The fork's copies of its source's events, and the events it recorded itself."""
    events = ctx.store.stream(fork_id)
    [record] = [e for e in events if isinstance(e, RunForked)]
    last_copy = record.originator_version + record.copied_events
    copies = [e for e in events if record.originator_version < e.originator_version <= last_copy]
    own = [e for e in events if e.originator_version > last_copy]
    return copies, own


def test_a_fork_is_charged_only_its_live_steps_and_its_family_sums_each_run_once(
    priced: Context, workspace: Path
) -> None:
    source_id, fork_id = source_and_fork(priced, workspace)
    source_events = priced.store.stream(source_id)
    copies, own = split(priced, fork_id)
    cut = next(
        i
        for i, e in enumerate(source_events)
        if isinstance(e, StepStarted) and e.step_id == "polish"
    )
    source_cost, before_cut = cost_of(source_events), cost_of(source_events[:cut])
    fork_cost, copied_cost = cost_of(own), cost_of(copies)
    assert fork_cost > 0 and copied_cost > 0 and source_cost > copied_cost
    assert copied_cost == before_cut  # the copies are the source's steps before the cut

    fork_view = build_run_view(priced.store.stream(fork_id))
    assert fork_view.run["cost_usd"] == pytest.approx(fork_cost)
    assert fork_view.run["copied_cost_usd"] == pytest.approx(before_cut)
    steps = {s["instance_id"]: s for s in fork_view.steps}
    assert steps["draft"].get("copied") and steps["draft"]["spent_usd"] > 0  # where it ran
    assert not steps["polish"].get("copied")  # the cut step: started in the copies, run live
    source_view = build_run_view(source_events)
    assert source_view.run["cost_usd"] == pytest.approx(source_cost)
    assert "copied_cost_usd" not in source_view.run

    # The run page's state: the fork's own tokens, its source's left out.
    state = run_state(fork_view)
    assert state.cost_usd == pytest.approx(fork_cost)
    assert state.copied_cost_usd == pytest.approx(before_cut)
    kept = [s for s in fork_view.steps if not s.get("copied")]
    assert state.input_tokens == sum((s.get("usage") or {}).get("input_tokens", 0) for s in kept)
    copied_tokens = steps["draft"]["usage"]["input_tokens"]
    assert copied_tokens > 0
    everything = sum((s.get("usage") or {}).get("input_tokens", 0) for s in fork_view.steps)
    assert state.input_tokens <= everything - copied_tokens

    with closing(Views.for_store(priced.store)) as views:
        views.catch_up()
        family = family_totals(views.query.state_of, fork_id)
        assert family is not None
        assert family == family_totals(views.query.state_of, source_id)  # either end
        assert family["root_run_id"] == source_id and family["runs"] == 2
        assert family["cost_usd"] == pytest.approx(source_cost + fork_cost)
        assert family["copied_cost_usd"] == pytest.approx(before_cut)
        source_state = views.query.state_of(source_id)
        fork_state = views.query.state_of(fork_id)
        assert source_state is not None and fork_state is not None
        tokens = [own_tokens(source_state), own_tokens(fork_state)]
        assert family["input_tokens"] == sum(t[0] for t in tokens)
        assert family["output_tokens"] == sum(t[1] for t in tokens)
        detail = views.query.run(fork_id)
        assert detail.family is not None and detail.family.cost_usd == family["cost_usd"]
        assert detail.cost_usd == pytest.approx(fork_cost)
        assert detail.copied_cost_usd == pytest.approx(before_cut)
        names = [s.step_id for s in detail.steps]
        assert [s.step_id for s in detail.steps if s.copied] == names[: names.index("polish")]
        assert views.query.run(source_id).family == detail.family

    with AnalyticsProjection.for_workspace(priced.store, workspace) as analytics:
        analytics.catch_up()
        runs = analytics.query(
            "SELECT run_id, cost_usd, copied_cost_usd, forked_from FROM runs"
        ).rows
        families = analytics.query(
            "SELECT root_run_id, runs, forks, cost_usd, copied_cost_usd FROM fork_families"
        ).rows
        by_model = analytics.query("SELECT sum(cost_usd) FROM agent_calls").rows
    found = {row[0]: row[1:] for row in runs}
    assert found[fork_id][0] == pytest.approx(fork_cost)
    assert found[fork_id][1] == pytest.approx(before_cut)
    assert found[fork_id][2] == source_id
    assert found[source_id][0] == pytest.approx(source_cost) and found[source_id][1] is None
    [(root, count, forks, cost, copied)] = families
    assert (root, count, forks) == (source_id, 2, 1)
    assert cost == pytest.approx(source_cost + fork_cost)
    assert copied == pytest.approx(before_cut)
    assert by_model[0][0] == pytest.approx(source_cost + fork_cost)  # every total over runs


def test_show_prints_the_family_and_what_a_fork_copied(priced: Context, workspace: Path) -> None:
    source_id, fork_id = source_and_fork(priced, workspace)
    copies, own = split(priced, fork_id)
    family = round(cost_of(priced.store.stream(source_id)) + cost_of(own), 4)
    priced.close()

    def show(run_id: str, *more: str, quick: str = "1") -> str:
        done = subprocess.run(
            [CLI, "show", run_id, "-w", str(workspace), *more],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "CONTROLROOM_QUICK_READS": quick},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    show(source_id)  # the views caught up: the quick read can take the views file next
    for quick in ("1", "0"):  # the quick read of the views file, and the full path
        text = show(fork_id, quick=quick)
        assert f"fork family: 2 runs, ${family:.4f}, " in text
        assert f"(root {source_id})" in text
        assert f"copied from source: ${cost_of(copies):.4f} (not paid again)" in text
        assert f"cost: ${cost_of(own):.4f} " in text
    shown = json.loads(show(fork_id, "--json"))
    assert shown["family"]["root_run_id"] == source_id
    assert round(shown["family"]["cost_usd"], 4) == family
    assert "copied from source" not in show(source_id)
    assert f"fork family: 2 runs, ${family:.4f}, " in show(source_id)


def test_an_eval_carries_its_forks_own_spend(priced: Context, workspace: Path) -> None:
    """The eval's own stream names its forks (`EvalForkStarted`): its `eval` total is their
    own spend, their copies of the sources' steps apart."""
    source_id, fork_id = source_and_fork(priced, workspace)
    eval_id = "run_eval_fixture"
    eval_view = RunView()
    started = next(e for e in priced.store.stream(source_id) if isinstance(e, RunStarted))
    data = json.loads(started.stored_json())
    data.update(originator_id=eval_id, originator_version=1)
    eval_view.apply_data("RunStarted", data)
    eval_view.apply_data(
        "EvalForkStarted",
        {
            "originator_id": eval_id, "originator_version": 2, "timestamp": data["timestamp"],
            "step_id": "eval", "instance_id": "eval", "source_run_id": source_id,
            "fork_run_id": fork_id, "from_step": "polish",
        },
    )  # fmt: skip
    copies, own = split(priced, fork_id)
    fork_state = build_run_view(priced.store.stream(fork_id)).to_state()
    states = {eval_id: eval_view.to_state(), fork_id: fork_state}
    totals = eval_totals(states.get, eval_id)
    assert totals is not None
    assert totals["forks"] == 1
    assert totals["cost_usd"] == pytest.approx(cost_of(own))
    assert totals["copied_cost_usd"] == pytest.approx(cost_of(copies))
    assert (totals["input_tokens"], totals["output_tokens"]) == own_tokens(fork_state)
    assert eval_view.consolidated()["eval_forks"] == [
        {"run_id": fork_id, "source_run_id": source_id, "step": "polish"}
    ]
