"""Agents on real providers (local servers speaking each API): replies are extracted and
validated, invalid ones asked again with the errors named, then STOP_HOOK with an issue of
its own; the exact request sent is recorded; a failed run is continued with `retry`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.domain.issue import IssueOpened
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    DodChecked,
    RunRetried,
    StepStarted,
    StopHook,
)
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.replay_test import replay_test
from controlroom.engine.service import RunRequest, RunService
from tests.conftest import sent_bodies
from tests.fake_llm import REPLY, Script, anthropic_app, openai_app, serve
from tests.live import live_server
from tests.test_cli_e2e import cli as run_cli

KEY = "sk-test-contracts-9a8b7c6d5e"
KINDS = ["openai", "anthropic"]
CLI = str(Path(sys.executable).parent / "controlroom")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMOTE_LLM_KEY", KEY)


def configure(workspace: Path, kind: str, base: str, roles: list[str] | None, **extra: Any) -> None:
    """`roles=None`: every role on the remote provider; else only those roles."""
    choice = {"provider": "remote", "model": "house-model", "params": {"temperature": 0.1}}
    config: dict[str, Any] = {
        "providers": {
            "remote": {
                "type": kind,
                "base_url": base,
                "api_key_env": "REMOTE_LLM_KEY",
                "timeout_s": 5,
                "max_retries": 2,
                "backoff_s": 0.01,
                **extra,
            }
        }
    }
    if roles is None:
        config["default"] = choice
    else:
        config["roles"] = {role: choice for role in roles}
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(config))


@contextmanager
def fake(kind: str, *behaviours: str) -> Iterator[tuple[str, Script]]:
    script = Script(list(behaviours))
    app = openai_app(script) if kind == "openai" else anthropic_app(script)
    with serve(app) as base:
        yield f"{base}/v1" if kind == "openai" else base, script


def draft(workspace: Path) -> tuple[Run, list[Any], list[IssueOpened]]:
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
        Followers(ctx.store).catch_up()
        return run, ctx.store.stream(run.id), issues(ctx)
    finally:
        ctx.close()


def issues(ctx: Context) -> list[IssueOpened]:
    return [p.event for p in ctx.store.read_log() if isinstance(p.event, IssueOpened)]


def user_text(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


@pytest.mark.parametrize("kind", KINDS)
def test_every_role_on_a_real_provider_completes_and_each_request_is_recorded_as_sent(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "ok") as (base, script):
        configure(workspace, kind, base, roles=None)
        run, events, opened = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    agents = [e for e in events if isinstance(e, AgentResponded)]
    assert {a.provider for a in agents} == {"remote"} and len(agents) == 5
    continuity = next(a for a in agents if a.step_id == "continuity")
    assert continuity.contract == "continuity_report" and json.loads(continuity.output)["pass"]
    recorded = sent_bodies(workspace, events)
    received = [r["body"] for r in script.requests]
    # Each agent's event names the exact body its server received.
    assert [recorded[a.request_ref or ""] for a in agents] == received
    for body in received:
        system = body.get("system") or body["messages"][0]["content"]
        assert system.startswith("You are the") and "## Task" not in system
        assert "## Task" in user_text(body) and "You are the" not in user_text(body)
    structured = received[3]  # continuity: the contract goes as structured output too
    assert ("response_format" if kind == "openai" else "output_config") in structured
    assert not [i for i in opened if i.kind == "dod_failure"]
    assert KEY not in json.dumps([e.model_dump(mode="json") for e in events])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ["fenced", "preamble"])
def test_json_in_a_fence_or_after_a_preamble_is_accepted_and_the_raw_reply_kept(
    workspace: Path, kind: str, shape: str
) -> None:
    with fake(kind, shape) as (base, script):
        configure(workspace, kind, base, roles=["continuity"])
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    reply = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "continuity")
    assert json.loads(reply.output)["pass"] is True
    assert reply.raw_output is not None and reply.raw_output != reply.output
    assert len(script.requests) == 1 and not any(isinstance(e, AgentReplyRejected) for e in events)


@pytest.mark.parametrize("kind", KINDS)
def test_an_invalid_reply_is_asked_again_naming_its_errors_then_accepted(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "stringly", "ok") as (base, script):
        configure(workspace, kind, base, roles=["continuity"])
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    rejected = [e for e in events if isinstance(e, AgentReplyRejected)]
    assert [(r.attempt, r.will_retry, r.errors) for r in rejected] == [
        (1, True, ['$.pass: "true" is not of type boolean'])
    ]
    retry_user = user_text(script.requests[1]["body"])
    assert "previous reply was rejected" in retry_user and "$.pass" in retry_user
    reply = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "continuity")
    assert reply.attempts == 2 and reply.request_ref != rejected[0].request_ref


@pytest.mark.parametrize("kind", KINDS)
def test_replies_that_stay_invalid_stop_the_run_with_stop_hook_and_their_own_issue(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "prose") as (base, script):
        configure(workspace, kind, base, roles=["continuity"])
        run, events, opened = draft(workspace)
    assert run.status == RunStatus.FAILED and "STOP_HOOK" in (run.error or "")
    assert len(script.requests) == 3  # the first ask and 2 stricter ones
    rejected = [e for e in events if isinstance(e, AgentReplyRejected)]
    assert [(r.attempt, r.will_retry) for r in rejected] == [(1, True), (2, True), (3, False)]
    stop = next(e for e in events if isinstance(e, StopHook))
    assert (stop.step_id, stop.attempts, stop.contract) == ("continuity", 3, "continuity_report")
    assert stop.replies == [REPLY] * 3
    assert not any(isinstance(e, DodChecked) for e in events)
    assert [i.kind for i in opened] == ["agent_output_invalid"]
    assert opened[0].evidence["replies"] == [REPLY] * 3
    assert not any(isinstance(e, AgentResponded) and e.step_id == "critique" for e in events)


def test_a_failed_run_is_retried_from_the_failed_step_and_the_retry_recorded(
    workspace: Path,
) -> None:
    with fake("openai", "prose", "prose", "prose", "ok") as (base, script):
        configure(workspace, "openai", base, roles=["continuity"])
        run, _, _ = draft(workspace)
        assert run.status == RunStatus.FAILED
        ctx = Context.open(workspace)
        try:
            service = RunService(ctx)
            retried = asyncio.run(service.execute(service.retry(run.id)))
            events = ctx.store.stream(run.id)
        finally:
            ctx.close()
    assert retried.status == RunStatus.DONE, retried.error
    assert [e.step_id for e in events if isinstance(e, RunRetried)] == ["continuity"]
    started = [e.instance_id for e in events if isinstance(e, StepStarted)]
    assert started[-5:] == [
        "continuity#2",
        "continuity_gate",
        "critique",
        "critic_gate",
        "write_scene",
    ]
    assert len(script.requests) == 4

    # Replayed with the server gone: the three prose replies fail the contract again, the
    # run fails where it had, is retried where it was, and ends as it did.
    ctx = Context.open(workspace)
    try:
        report = asyncio.run(replay_test(ctx, run.id, workspace.parent / "replay"))
    finally:
        ctx.close()
    assert report.passed, report.lines()
    # Every recorded reply was given again (the rejected prose ones included), none asked.
    assert report.answered == sum(1 for e in events if getattr(e, "request_ref", None))


def test_a_server_that_refuses_structured_output_gets_the_contract_in_the_prompt_only(
    workspace: Path,
) -> None:
    with fake("openai", "refuse_schema") as (base, script):
        configure(workspace, "openai", base, roles=["continuity"])
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    first, second = (r["body"] for r in script.requests)
    assert "response_format" in first and "response_format" not in second
    reply = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "continuity")
    recorded = sent_bodies(workspace, events)
    assert recorded[reply.request_ref or ""] == second


def test_the_cli_shows_the_exact_request_and_retries_a_stopped_run(workspace: Path) -> None:
    with fake("anthropic", "prose", "prose", "prose", "ok") as (base, script):
        configure(workspace, "anthropic", base, roles=["continuity"])
        failed = cli(workspace, "run", "Draft scene 4", "-q", "--json")
        assert failed.returncode == 1, failed.stderr
        run_id = json.loads(failed.stdout)["run_id"]
        shown = cli(workspace, "show", run_id, "--request", "continuity", "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["body"] == script.requests[2]["body"]
        text = cli(workspace, "show", run_id, "--request", "continuity").stdout
        assert "--- system ---\nYou are the Continuity checker" in text and "--- user ---" in text
        bad = cli(workspace, "retry", run_id, "--from", "critique")
        assert bad.returncode == 64 and "comes after the step" in bad.stderr
        retried = cli(workspace, "retry", run_id, "-q", "--json")
        assert retried.returncode == 0, retried.stderr
    view = json.loads(retried.stdout)
    assert view["status"] == "done" and view["retried"] == 1
    steps = {s.get("instance_id", s["step_id"]): s for s in view["steps"]}
    assert steps["continuity#2"]["status"] == "done"
    listed = json.loads(cli(workspace, "issues", "--json").stdout)
    assert [i["kind"] for i in listed] == ["agent_output_invalid"]
    assert KEY not in failed.stdout + shown.stdout + retried.stdout


def test_the_api_retries_a_failed_run_from_an_earlier_step(workspace: Path) -> None:
    with fake("openai", "prose", "prose", "prose", "ok") as (base, script):
        configure(workspace, "openai", base, roles=["continuity"])
        with live_server(workspace) as api, httpx.Client(base_url=api, timeout=30) as client:
            run_id = client.post("/api/runs", json={"task": "Draft scene 4"}).json()["run_id"]
            assert wait_for(client, run_id, "failed")["error"].startswith("step 'continuity'")
            request = client.get(f"/api/runs/{run_id}/requests/continuity").json()
            assert request["body"] == script.requests[-1]["body"]
            refused = client.post(f"/api/runs/{run_id}/retry", json={"from": "nowhere"})
            assert refused.status_code == 400 and "nowhere" in refused.text
            retried = client.post(f"/api/runs/{run_id}/retry", json={"from": "polish"})
            assert retried.status_code == 200, retried.text
            assert retried.json()["from"] == "polish#2"
            done = wait_for(client, run_id, "done")
            again = client.post(f"/api/runs/{run_id}/retry")
            assert again.status_code == 409
    assert done["retried"] == 1
    feed = json.dumps(done)
    assert KEY not in feed


def wait_for(client: httpx.Client, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        view: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if view["status"] == status:
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.05)


def cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-w", str(workspace))
