"""Tier-sized agent steps (seed 000, "Tier-Based Step Sizing"): a T1 agent's recipe step is
three recorded micro-calls (triage → finding → evidence); T3 and T5 agents make one call."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.micro_steps import check_evidence, read_triage
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentMicroStepResponded,
    AgentResponded,
    ModelRequestRecorded,
    StepFailed,
)
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.port import ModelRequest, ModelResponse
from controlroom.projections.views import Views
from tests.conftest import sent_bodies
from tests.fakes import RecordingModel

DRAFT = "Draft scene 4 from the outline"
AGENT_STEPS = ["brief", "draft", "polish", "continuity", "critique"]


# -- reading the micro-step replies (domain) -------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "decision", "text"),
    [
        (
            "FOCUS: the ledger beat (from outline_beat)",
            "focus",
            "the ledger beat (from outline_beat)",
        ),
        ("**Focus:** the eye colour", "focus", "the eye colour"),
        ("ABSTAIN: canon_context is empty", "abstain", "canon_context is empty"),
        (
            "Abstain.\nThe outline beat names no scene.",
            "abstain",
            "The outline beat names no scene.",
        ),
        ("I would concentrate on the storm.", "focus", "I would concentrate on the storm."),
    ],
    ids=["focus", "markdown-focus", "abstain", "abstain-reason-below", "prose"],
)
def test_a_triage_reply_is_read_as_focus_or_abstain(reply: str, decision: str, text: str) -> None:
    triage = read_triage(reply)
    assert (triage.decision, triage.text) == (decision, text)


SHOWN = {"canon_context": "Kael: eyes = grey\nMira: role = archivist", "draft": "Rain fell."}


def test_an_evidence_line_must_quote_an_input_the_step_read() -> None:
    ok = check_evidence('Evidence: slot: canon_context "Kael: eyes =\n grey"', SHOWN)
    assert ok.verified and ok.slot == "canon_context" and ok.problem is None
    curly = check_evidence("Evidence: canon_context — “Mira: role = archivist”", SHOWN)
    assert curly.verified
    wrong_slot = check_evidence('Evidence: slot: outline_beat "Kael: eyes = grey"', SHOWN)
    assert not wrong_slot.verified
    assert "'outline_beat' is not an input of this step" in (wrong_slot.problem or "")
    misquote = check_evidence('Evidence: slot: canon_context "Kael: eyes = green"', SHOWN)
    assert misquote.problem == 'the quote "Kael: eyes = green" is not in canon_context'
    two = check_evidence('Evidence: slot: draft "Rain fell."\nEvidence: slot: draft "Rain"', SHOWN)
    assert two.problem == "exactly one Evidence: line is required, found 2"
    unreadable = check_evidence("Evidence: the canon card", SHOWN)
    assert "cannot read" in (unreadable.problem or "")


# -- through the engine ------------------------------------------------------------------------


class ScriptedMicro(RecordingModel):
    """The offline model, with the triage and evidence replies of a real model scripted."""

    def __init__(self, triage: str | None = None, evidence: str | None = None) -> None:
        super().__init__()
        self.script = {"step_triage": triage, "step_evidence": evidence}

    async def complete(self, request: ModelRequest, on_text: Any = None) -> ModelResponse:
        scripted = self.script.get(request.prompt_type)
        if scripted is None:
            return await super().complete(request, on_text)
        self.requests.append(request)
        response = await self.inner.complete(request, on_text)
        return ModelResponse(text=scripted, usage=response.usage, sent=response.sent)


def run_with_tier(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tier: str, model: RecordingModel
) -> tuple[Context, Run]:
    monkeypatch.setenv("CONTROLROOM_TIER", tier)
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest(DRAFT, {}))))
    return ctx, run


def test_a_t1_agent_makes_three_recorded_calls_per_step(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = RecordingModel()
    ctx, run = run_with_tier(workspace, monkeypatch, "t1", model)
    assert run.status == RunStatus.DONE, run.error
    events = list(ctx.store.stream(run.id))
    calls = [
        (e.step_id, e.micro_step)
        for e in events
        if isinstance(e, AgentMicroStepResponded | AgentResponded)
    ]
    assert calls == [
        (step, micro) for step in AGENT_STEPS for micro in ("triage", "finding", "evidence")
    ]
    assert [(r.prompt_type, r.tier) for r in model.requests[:3]] == [
        ("step_triage", "t1"),
        ("refine_brief", "t1"),
        ("step_evidence", "t1"),
    ]
    # The finding is shown the triage's focus; each call's exact request is on record.
    assert model.requests[1].inputs["triage_focus"].startswith("FOCUS:")
    recorded = {e.ref for e in events if isinstance(e, ModelRequestRecorded)}
    micro = [e for e in events if isinstance(e, AgentMicroStepResponded)]
    assert all(e.request_ref in recorded for e in micro)
    assert all(e.prompt_variant == "t1" and e.tier == "t1" for e in micro)
    assert {e.decision for e in micro if e.micro_step == "triage"} == {"focus"}
    evidence = [e for e in micro if e.micro_step == "evidence"]
    assert all(e.verified for e in evidence), [(e.output, e.problem) for e in evidence]
    # The finding's reply is the slot; the evidence line is not written into it.
    responded = {e.step_id: e for e in events if isinstance(e, AgentResponded)}
    assert responded["brief"].prompt_variant == "t1"
    assert "Evidence:" not in run.slot_texts["scene_brief"]
    ctx.close()


@pytest.mark.parametrize("tier", ["t3", "t5"])
def test_t3_and_t5_agents_make_one_call_with_their_variant(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tier: str
) -> None:
    model = RecordingModel()
    ctx, run = run_with_tier(workspace, monkeypatch, tier, model)
    assert run.status == RunStatus.DONE, run.error
    events = list(ctx.store.stream(run.id))
    assert not [e for e in events if isinstance(e, AgentMicroStepResponded)]
    responded = [e for e in events if isinstance(e, AgentResponded)]
    assert [e.step_id for e in responded] == AGENT_STEPS
    assert {e.prompt_variant for e in responded} == {tier}
    assert all(e.micro_step is None for e in responded)
    assert len(model.requests) == len(AGENT_STEPS)
    ctx.close()


def test_a_t1_abstention_fails_the_step_with_the_agents_reason(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedMicro(triage="ABSTAIN: the outline beat names no characters")
    ctx, run = run_with_tier(workspace, monkeypatch, "t1", model)
    assert run.status == RunStatus.FAILED
    failed = next(e for e in ctx.store.stream(run.id) if isinstance(e, StepFailed))
    assert failed.step_id == "brief"
    assert "abstained at triage" in failed.error
    assert "the outline beat names no characters" in failed.error
    # No guess was made: the finding was never asked for.
    assert [r.prompt_type for r in model.requests] == ["step_triage"]
    # The call that abstained is in the trail, with its request, before the failure.
    events = list(ctx.store.stream(run.id))
    triage = [e for e in events if isinstance(e, AgentMicroStepResponded)]
    assert [(e.micro_step, e.decision, e.step_id) for e in triage] == [
        ("triage", "abstain", "brief")
    ]
    assert "names no characters" in triage[0].output
    assert triage[0].request_ref in {e.ref for e in events if isinstance(e, ModelRequestRecorded)}
    assert events.index(triage[0]) < events.index(failed)
    ctx.close()


def test_a_t1_citation_that_does_not_check_out_is_recorded_not_hidden(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = 'Here is my evidence.\n\nEvidence: slot: canon_context "Kael has green eyes"'
    ctx, run = run_with_tier(workspace, monkeypatch, "t1", ScriptedMicro(evidence=bad))
    assert run.status == RunStatus.DONE, run.error
    evidence = [
        e
        for e in ctx.store.stream(run.id)
        if isinstance(e, AgentMicroStepResponded) and e.micro_step == "evidence"
    ]
    assert evidence and all(e.verified is False for e in evidence)
    brief = evidence[0]
    assert brief.problem == 'the quote "Kael has green eyes" is not in canon_context'
    # The run view carries the three calls, the failed check included.
    views = Views.for_store(ctx.store)
    Followers(ctx.store, views).catch_up()
    step = next(s for s in views.query.steps(run.id) if s.step_id == "brief")
    assert step.micro_steps is not None
    assert [m.micro_step for m in step.micro_steps] == ["triage", "finding", "evidence"]
    assert step.micro_steps[2].verified is False
    assert step.micro_steps[2].problem == brief.problem
    views.close()
    ctx.close()


# -- through the CLI ------------------------------------------------------------------------


def test_cli_a_t1_run_shows_its_micro_steps_and_analytics_counts_them(tmp_path: Path) -> None:
    from tests.conftest import DEMO_LEFTOVERS, EXAMPLE

    workspace = tmp_path / "novel"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    env = {**os.environ, "CONTROLROOM_TIER": "t1", "CONTROLROOM_HOME": str(tmp_path / "home")}
    env.pop("CONTROLROOM_STORE", None)
    cli = [sys.executable, "-m", "controlroom.api.cli"]
    done = subprocess.run(
        [*cli, "run", DRAFT, "-w", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("· triage: FOCUS:") == len(AGENT_STEPS)
    assert done.stderr.count("· evidence: Evidence: slot:") == len(AGENT_STEPS)
    assert "unverified" not in done.stderr
    query = (
        "SELECT prompt_type, count(*) AS n FROM agent_calls "
        "WHERE prompt_type LIKE 'step_%' GROUP BY 1 ORDER BY 1"
    )
    answer = subprocess.run(
        [*cli, "analytics", query, "--json", "-w", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert answer.returncode == 0, answer.stderr
    rows = json.loads(answer.stdout)
    rows = rows.get("rows", rows) if isinstance(rows, dict) else rows
    counts = {
        (row["prompt_type"] if isinstance(row, dict) else row[0]): (
            row["n"] if isinstance(row, dict) else row[1]
        )
        for row in rows
    }
    assert counts == {"step_evidence": len(AGENT_STEPS), "step_triage": len(AGENT_STEPS)}


# -- a T1 agent on a real provider's HTTP API ---------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_t1_agent_on_a_provider_api_records_every_call_as_sent(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    from tests.test_contracts_e2e import KEY, draft, fake

    monkeypatch.setenv("REMOTE_LLM_KEY", KEY)
    with fake(kind, "ok") as (base, script):
        provider = {
            "type": kind,
            "base_url": base,
            "api_key_env": "REMOTE_LLM_KEY",
            "timeout_s": 5,
            "max_retries": 2,
            "backoff_s": 0.01,
        }
        choice = {"provider": "remote", "model": "house-model", "tier": "t1"}
        config = {"providers": {"remote": provider}, "default": choice}
        (workspace / ".control-room").mkdir(exist_ok=True)
        (workspace / ".control-room" / "models.json").write_text(json.dumps(config))
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    calls = [e for e in events if isinstance(e, AgentMicroStepResponded | AgentResponded)]
    assert len(calls) == len(script.requests) == 3 * len(AGENT_STEPS)
    recorded = sent_bodies(workspace, events)
    # Each call's event names the exact body its server received, in order.
    assert [recorded[c.request_ref or ""] for c in calls] == [r["body"] for r in script.requests]
    # The server answers the micro-calls in prose: the triage is read as its focus, and an
    # evidence reply with no Evidence line is recorded as unverified, with the reason.
    evidence = [c for c in calls if isinstance(c, AgentMicroStepResponded)][1]
    assert evidence.micro_step == "evidence" and evidence.verified is False
    assert evidence.problem == "exactly one Evidence: line is required, found 0"
    continuity = next(
        c for c in calls if isinstance(c, AgentResponded) and c.step_id == "continuity"
    )
    assert continuity.micro_step == "finding" and json.loads(continuity.output)["pass"]


def test_a_t1_runs_tokens_count_each_of_its_calls_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's reply is also its "finding" micro-step: the run's totals count it once,
    with the triage and evidence calls beside it."""
    from controlroom.api.run_page import run_state

    ctx, run = run_with_tier(workspace, monkeypatch, "t1", ScriptedMicro())
    assert run.status == RunStatus.DONE, run.error
    calls = [
        e
        for e in ctx.store.stream(run.id)
        if isinstance(e, AgentMicroStepResponded | AgentResponded)
        and not getattr(e, "repeats_items", False)
    ]
    views = Views.for_store(ctx.store)
    Followers(ctx.store, views).catch_up()
    state = run_state(views.query.view(run.id))
    assert state.input_tokens == sum(e.usage.input_tokens for e in calls)
    assert state.output_tokens == sum(e.usage.output_tokens for e in calls)
    views.close()
    ctx.close()
