"""The escalation ladder (issue 26): a failing agent step climbs escalate → consult →
triage → a person, every rung a recorded decision, through the engine and its policies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import ModelCallError, ModelConfigError
from controlroom.domain.flow_events import FlowDecided as StoredDecision
from controlroom.domain.issue import Issue
from controlroom.domain.ladder import LadderCallRecorded, TriageDecided
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import HumanAnswered, StepFailed, StepWaiting
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.issues import IssueService
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.config import ModelsConfig
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse
from controlroom.projections.views import Views

RECIPE = "creative_draft_scene"
ARGS = {"scene_number": 4}


class Scripted:
    """A model server whose behaviour is chosen by the model asked for: `bad-*` answer
    HTTP 500, `prose-*` answer prose, `block-triage` BLOCKs, `relax-triage` RELAXes, and
    every other model answers as the offline model would. A writer model named `fixable`
    fails until its prompt carries a person's resolution."""

    provider = "lab"

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.asked: list[tuple[str, str]] = []

    async def complete(self, request: ModelRequest, on_text: Any = None) -> ModelResponse:
        self.asked.append((request.model, request.prompt_type))
        model = request.model
        if model.startswith("bad") or (
            model == "fixable" and "<human_resolution" not in request.prompt
        ):
            raise ModelCallError("server_error", "boom", 500)
        if request.prompt_type == "ladder_triage":
            decision = {"block-triage": "BLOCK", "relax-triage": "RELAX"}.get(model, "DEFER")
            text = json.dumps(
                {
                    "decision": decision,
                    "confidence": 0.9,
                    "reason": "scripted",
                    "constraint": "length",
                    "relaxation": "shorter",
                    "note": "next time",
                }
            )
            return ModelResponse(text=text, usage=_usage())
        if request.prompt_type in ("ladder_consult", "ladder_synthesize"):
            return ModelResponse(text=f"advice from {model}", usage=_usage())
        offline = ModelRequest(**{**request.__dict__, "model": "offline-deterministic-1"})
        return await self.inner.complete(offline, on_text)


def _usage() -> Any:
    from controlroom.domain.run_events import TokenUsage

    return TokenUsage(input_tokens=100, output_tokens=20)


def config(writer: dict[str, Any]) -> ModelsConfig:
    return ModelsConfig.model_validate(
        {
            "providers": {
                "lab": {
                    "type": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "max_retries": 0,
                    "backoff_s": 0,
                    "prices": {
                        "bad-1": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
                        "good": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
                    },
                }
            },
            "roles": {"writer": {"provider": "lab", **writer}},
        }
    )


def open_ctx(workspace: Path, writer: dict[str, Any]) -> tuple[Context, Scripted]:
    model = Scripted()
    agents = AgentDirectory(config(writer), clients={"lab": model})
    return Context.open(workspace, agents=agents), model


def decisions(ctx: Context, run_id: str) -> list[StoredDecision]:
    return [e for e in ctx.store.stream(run_id) if isinstance(e, StoredDecision)]


def rungs(ctx: Context, run_id: str) -> list[str]:
    return [str((d.rung or {}).get("kind")) for d in decisions(ctx, run_id) if d.rung]


def run_to_rest(ctx: Context) -> Run:
    service = RunService(ctx)
    run = service.start(RunRequest(RECIPE, ARGS))
    return asyncio.run(service.execute(run))


def test_a_failing_writer_escalates_along_its_chain_and_the_run_ends_done(
    workspace: Path,
) -> None:
    ctx, model = open_ctx(
        workspace,
        {
            "model": "bad-1",
            "escalation": [
                {"provider": "lab", "model": "bad-2"},
                {"provider": "lab", "model": "good"},
            ],
        },
    )
    run = run_to_rest(ctx)
    assert run.status == RunStatus.DONE, run.error
    assert rungs(ctx, run.id) == ["escalate", "escalate"]
    first, second = [d for d in decisions(ctx, run.id) if d.rung]
    assert first.rung and first.rung["from_model"] == "lab:bad-1"
    assert first.rung["to_model"] == "lab:bad-2" and first.instance_id == "draft#2"
    assert second.rung and second.rung["to_model"] == "lab:good"
    assert second.instance_id == "draft#3" and "server_error" in second.rung["failure"]
    # the failure is in the next rung's prompt; every model was named, none defaulted
    writer_calls = [m for m, p in model.asked if p == "draft_scene"]
    assert writer_calls == ["bad-1", "bad-2", "good"]
    failed = [e for e in ctx.store.stream(run.id) if isinstance(e, StepFailed)]
    assert [f.instance_id for f in failed] == ["draft", "draft#2"]
    ctx.close()


def test_the_ladder_is_recorded_at_start_and_resume_reads_it_without_asking_again(
    workspace: Path,
) -> None:
    ctx, _ = open_ctx(
        workspace, {"model": "bad-1", "escalation": [{"provider": "lab", "model": "good"}]}
    )
    run = run_to_rest(ctx)
    loaded = ctx.store.load(Run, run.id)
    assert loaded is not None
    assert loaded.ladders["draft"].chain == ["lab:good"]
    assert loaded.ladders["draft"].base == "lab:bad-1"
    assert [d.rung and d.rung["kind"] for d in loaded.decisions] == ["escalate"]
    ctx.close()


def test_a_ladder_naming_an_unconfigured_model_is_refused_before_the_run_starts(
    workspace: Path,
) -> None:
    ctx, _ = open_ctx(
        workspace, {"model": "good", "escalation": [{"provider": "nowhere", "model": "x"}]}
    )
    with pytest.raises(ModelConfigError, match="nowhere"):
        RunService(ctx).start(RunRequest(RECIPE, ARGS))
    ctx.close()


def test_a_spent_ladder_consults_triages_and_waits_for_a_person_who_answers(
    workspace: Path,
) -> None:
    ctx, model = open_ctx(
        workspace,
        {
            "model": "bad-1",
            "escalation": [{"provider": "lab", "model": "fixable"}],
            "consult": [
                {"provider": "lab", "model": "peer-a"},
                {"provider": "lab", "model": "peer-b"},
            ],
            "synthesizer": {"provider": "lab", "model": "synth"},
            "triage": {"provider": "lab", "model": "block-triage"},
            "owner": "editor-in-chief",
        },
    )
    run = run_to_rest(ctx)
    assert run.status == RunStatus.RUNNING and run.is_waiting
    assert rungs(ctx, run.id) == ["escalate", "consult", "triage", "human"]
    calls = [e for e in ctx.store.stream(run.id) if isinstance(e, LadderCallRecorded)]
    assert [c.which for c in calls] == ["consult#1", "consult#2", "synthesis", "triage"]
    assert {c.model for c in calls} == {"peer-a", "peer-b", "synth", "block-triage"}
    (triage,) = [e for e in ctx.store.stream(run.id) if isinstance(e, TriageDecided)]
    assert triage.decision == "BLOCK"
    # the consult's solution reached the step's prompt on the strongest model
    (waiting,) = [e for e in ctx.store.stream(run.id) if isinstance(e, StepWaiting)]
    assert waiting.awaiting["kind"] == "person" and waiting.awaiting["owner"] == "editor-in-chief"
    assert "escalate" in waiting.reason and "consult" in waiting.reason

    views = Views.for_store(ctx.store, ctx.workspace.root)
    Followers(ctx.store, views).catch_up()
    issue_id = str(waiting.awaiting["issue_id"])
    issue = ctx.store.load(Issue, issue_id)
    assert issue is not None and issue.kind == "needs_human" and issue.status == "open"

    IssueService(ctx).answer(issue_id, "Write it shorter and keep Kael's grey eyes.")
    Followers(ctx.store, views).catch_up()
    run = RunService(ctx).load(run.id)
    assert not run.is_waiting
    answered = [e for e in ctx.store.stream(run.id) if isinstance(e, HumanAnswered)]
    assert answered and answered[0].issue_id == issue_id
    run = asyncio.run(RunService(ctx).resume(run.id))
    assert run.status == RunStatus.DONE, run.error
    assert rungs(ctx, run.id)[-1] == "answered"
    last_prompts = [m for m, p in model.asked if p == "draft_scene"]
    assert last_prompts[-1] == "fixable"
    # answering twice is refused: the issue is closed by the answer
    with pytest.raises(Exception, match="closed"):
        IssueService(ctx).answer(issue_id, "again")
    views.close()
    ctx.close()


def test_a_deferred_step_passes_over_its_dependants_and_the_run_is_a_partial_success(
    workspace: Path,
) -> None:
    ctx, _ = open_ctx(
        workspace,
        {"model": "bad-1", "triage": {"provider": "lab", "model": "defer-triage"}},
    )
    run = run_to_rest(ctx)
    assert run.status == RunStatus.DONE and run.outcome == 12, run.error
    kinds = rungs(ctx, run.id)
    assert kinds[:2] == ["triage", "deferred"]
    deferred = [d for d in decisions(ctx, run.id) if (d.rung or {}).get("kind") == "deferred"]
    skipped = {s for d in deferred for s in (d.rung or {}).get("skipped", [])}
    assert {"draft", "polish", "continuity", "critique", "write_scene"} <= skipped
    ctx.close()


def test_low_confidence_or_spent_limits_turn_a_relax_into_block() -> None:
    from controlroom.engine.ladder_step import triage_verdict

    answer = {
        "decision": "RELAX",
        "confidence": 0.5,
        "reason": "r",
        "constraint": "c",
        "relaxation": "x",
    }
    assert triage_verdict(answer, {"min_confidence": 0.7, "relax_left": 1})["decision"] == "BLOCK"
    sure = {**answer, "confidence": 0.9}
    assert triage_verdict(sure, {"min_confidence": 0.7, "relax_left": 1})["decision"] == "RELAX"
    assert triage_verdict(sure, {"min_confidence": 0.7, "relax_left": 0})["decision"] == "BLOCK"
    unnamed = {**sure, "constraint": None}
    assert triage_verdict(unnamed, {"relax_left": 1})["decision"] == "BLOCK"


def test_cancelling_a_run_that_waits_for_a_person_closes_its_issue(workspace: Path) -> None:
    ctx, _ = open_ctx(workspace, {"model": "bad-1", "owner": "the author"})
    run = run_to_rest(ctx)
    assert run.is_waiting and run.awaiting["kind"] == "person"
    views = Views.for_store(ctx.store, ctx.workspace.root)
    Followers(ctx.store, views).catch_up()
    issue_id = str(run.awaiting["issue_id"])
    RunService(ctx).cancel(run.id, "not needed")
    Followers(ctx.store, views).catch_up()
    issue = ctx.store.load(Issue, issue_id)
    assert issue is not None and issue.status == "closed"
    with pytest.raises(Exception, match="closed"):
        IssueService(ctx).answer(issue_id, "too late")
    views.close()
    ctx.close()


def test_a_ladders_fan_out_and_chain_are_bounded_at_load() -> None:
    from pydantic import ValidationError

    from controlroom.domain.ladder_spec import MAX_CONSULT, Ladder

    peers = [f"lab:p{i}" for i in range(MAX_CONSULT + 1)]
    with pytest.raises(ValidationError, match="at most 8"):
        Ladder(consult=peers, synthesizer="lab:s")
    with pytest.raises(ValueError, match="at most 8"):
        config(
            {
                "model": "good",
                "consult": [{"provider": "lab", "model": m} for m in "abcdefghi"],
                "synthesizer": {"provider": "lab", "model": "s"},
            }
        )
