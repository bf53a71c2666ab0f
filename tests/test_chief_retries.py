"""The Chief's and the conference's model calls are retried like a recipe step's (429, 5xx:
backoff, each failed attempt recorded), and the Chief's review of a finished task is
bounded: asked again a few times, each failure recorded, then given up — never again, in
this process or the next. A failing review never stops the plan or holds up its next task.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from controlroom.domain.conference import AgentAttemptFailed, ConferenceRound, ReplyAccepted
from controlroom.domain.plan import REVIEW_ATTEMPTS, SessionPlan
from controlroom.domain.plan_errors import PlanStateError
from controlroom.domain.plan_events import (
    ChiefAttemptFailed,
    PlanTask,
    TaskFinished,
    TaskReviewAbandoned,
    TaskReviewFailed,
)
from controlroom.domain.run_events import ModelAttemptFailed
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.context import Context
from controlroom.engine.plans import PlanService
from controlroom.engine.reviews import review_run_id
from controlroom.projections.views import Views
from tests.fake_llm import serve
from tests.live import live_server
from tests.test_cli_e2e import cli

KEY = "sk-test-chief-retries-1a2b3c"
#: Two tasks, the second needing the first: the offline Chief plans it the same every time.
INTENT = "Validate scene 3 against the outline, then check consistency of scene 3"
MAX_RETRIES = 1
#: Model calls one review attempt makes against a server that keeps failing.
CALLS_PER_ATTEMPT = MAX_RETRIES + 1
PLAN_REPLY = {
    "tasks": [
        {"id": 1, "description": "Validate scene 3 against the outline", "deps": [], "dod": ""},
        {"id": 2, "description": "Check consistency of scene 3", "deps": [1], "dod": ""},
    ],
    "summary": "validate, then check",
}
REPLIES = {
    "session_plan": json.dumps(PLAN_REPLY),
    "task_review": json.dumps({"decision": "accept", "notes": "the DoD holds"}),
    "tool_choice": json.dumps({"tool": None, "args": {}, "reason": "enough"}),
    "": 'Kael is consistent.\nEvidence: file: Story/Scenes/SCN-02-the-ambush.md "His green eyes"',
}


class ChiefServer:
    """An OpenAI-compatible server whose behaviour is scripted per reply contract
    (`session_plan`, `task_review`, `tool_choice`; "" for replies without one): `429`,
    `500`, `prose` (not what was asked) or `ok`; the last behaviour of a script repeats."""

    def __init__(self, **scripts: list[str]) -> None:
        self.scripts = scripts
        self.calls: dict[str, int] = {}

    def count(self, contract: str) -> int:
        return self.calls.get(contract, 0)

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            body = await request.json()
            contract = body.get("response_format", {}).get("json_schema", {}).get("name", "")
            script = self.scripts.get(contract, ["ok"])
            self.calls[contract] = self.count(contract) + 1
            behaviour = script[min(self.calls[contract], len(script)) - 1]
            if behaviour in ("429", "500"):
                return JSONResponse(
                    {"error": {"message": f"scripted {behaviour}", "type": "server_error"}},
                    status_code=int(behaviour),
                    headers={"retry-after": "0"},
                )
            text = "Certainly, here you go." if behaviour == "prose" else REPLIES[contract]
            return JSONResponse(
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            )

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHIEF_LLM_KEY", KEY)


@contextmanager
def remote(workspace: Path, server: ChiefServer, *roles: str) -> Iterator[None]:
    """The roles (default: the Chief) answered by `server`, through models.json."""
    with serve(server.app()) as base:
        provider = {
            "type": "openai",
            "base_url": f"{base}/v1",
            "api_key_env": "CHIEF_LLM_KEY",
            "timeout_s": 5,
            "max_retries": MAX_RETRIES,
            "backoff_s": 0.01,
        }
        choice = {"provider": "remote", "model": "house-model"}
        config = {
            "providers": {"remote": provider},
            "roles": {role: choice for role in roles or ("chief",)},
        }
        folder = workspace / ".control-room"
        folder.mkdir(exist_ok=True)
        (folder / "models.json").write_text(json.dumps(config))
        try:
            yield
        finally:
            (folder / "models.json").unlink()


def approved_plan(workspace: Path) -> str:
    """A plan of two tasks planned by the offline Chief, approved."""
    ctx = Context.open(workspace)
    try:
        service = PlanService(ctx)
        plan = asyncio.run(service.create(INTENT))
        service.approve(plan.id)
    finally:
        ctx.close()
    return plan.id


def plan_events(workspace: Path, plan_id: str) -> list[Any]:
    ctx = Context.open(workspace)
    try:
        return list(ctx.store.stream(plan_id))
    finally:
        ctx.close()


run_events = plan_events  # a review run's stream reads the same way


def of_type(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


# -- the domain ---------------------------------------------------------------------------------


def test_a_failed_review_waits_longer_each_time_and_is_given_up_at_the_bound() -> None:
    at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    task = PlanTask(task_id=1, description="Validate scene 3", recipe_id="analytical_prose")
    plan = SessionPlan.create("plan_1", at, intent="x", session_id="s", tasks=[task])
    plan.approve(at)
    plan.start(at)
    plan.record_run_outcome(at, plan.run_ids[1], "done")
    assert plan.reviews_due(at) == [1]
    for attempt in range(1, REVIEW_ATTEMPTS):
        failed = plan.fail_review(at, 1, "server_error (HTTP 500)", first_delay_s=2.0)
        assert failed.retry_at == at + timedelta(seconds=2.0 * 2 ** (attempt - 1))
        assert plan.reviews_due(at) == [] and plan.next_review_retry() == failed.retry_at
        at = failed.retry_at
        assert plan.reviews_due(at) == [1]
    plan.fail_review(at, 1, "server_error (HTTP 500)", first_delay_s=2.0)
    assert plan.unreviewed() == [] and plan.next_review_retry() is None
    with pytest.raises(PlanStateError, match="its review is over"):
        plan.fail_review(at, 1, "again", first_delay_s=2.0)
    replayed = SessionPlan.project(None, plan.collect_events())
    assert replayed is not None and replayed.abandoned_reviews[1].attempts == REVIEW_ATTEMPTS
    assert replayed.reviews_due(at + timedelta(days=1)) == []  # the count survives a restart


# -- the Chief's plan ---------------------------------------------------------------------------


def test_a_chief_rate_limited_once_still_plans_and_the_failed_attempt_is_recorded(
    workspace: Path,
) -> None:
    server = ChiefServer(session_plan=["429", "ok"])
    with remote(workspace, server):
        ctx = Context.open(workspace)
        try:
            plan = asyncio.run(PlanService(ctx).create(INTENT))
            events = list(ctx.store.stream(plan.id))
        finally:
            ctx.close()
    assert [plan.tasks[t].description for t in plan.order] == [
        "Validate scene 3 against the outline",
        "Check consistency of scene 3",
    ]
    assert server.count("session_plan") == 2
    [failed] = of_type(events, ChiefAttemptFailed)
    assert (failed.task_id, failed.attempt, failed.kind, failed.status) == (
        None,
        1,
        "rate_limited",
        429,
    )
    assert failed.will_retry and failed.provider == "remote" and failed.model == "house-model"


def test_a_chief_server_answering_5xx_makes_post_plans_a_502_naming_the_failure(
    workspace: Path,
) -> None:
    server = ChiefServer(session_plan=["500"])
    with remote(workspace, server), live_server(workspace) as base:
        answer = httpx.post(f"{base}/api/plans", json={"intent": INTENT}, timeout=30)
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] == "model_unavailable"
    assert "HTTP 500" in error["message"]
    assert f"after {CALLS_PER_ATTEMPT} attempt" in error["message"]
    assert KEY not in answer.text
    assert server.count("session_plan") == CALLS_PER_ATTEMPT


# -- the Chief's reviews ------------------------------------------------------------------------


def test_a_review_that_always_fails_is_asked_a_bounded_number_of_times_by_the_server(
    workspace: Path,
) -> None:
    plan_id = approved_plan(workspace)
    bound = 2 * REVIEW_ATTEMPTS * CALLS_PER_ATTEMPT  # two tasks
    server = ChiefServer(task_review=["500"])
    with remote(workspace, server):
        with live_server(workspace) as base:
            started = httpx.post(f"{base}/api/plans/{plan_id}/start", timeout=30)
            assert started.status_code == 200, started.text
            deadline = time.monotonic() + 30
            while len(of_type(plan_events(workspace, plan_id), TaskReviewAbandoned)) < 2:
                assert time.monotonic() < deadline, plan_events(workspace, plan_id)
                time.sleep(0.1)
            time.sleep(1.5)  # several passes of the server's loop: nobody asks again
            assert server.count("task_review") == bound
            shown = httpx.get(f"{base}/api/plans/{plan_id}", timeout=30).json()
        with live_server(workspace):  # a restarted server reads the count from the log
            time.sleep(1.5)
    assert server.count("task_review") == bound
    events = plan_events(workspace, plan_id)
    assert [t["state"] for t in shown["tasks"]] == ["done", "done"]
    failed = of_type(events, TaskReviewFailed)
    assert sorted((e.task_id, e.attempt) for e in failed) == [
        (task, n) for task in (1, 2) for n in range(1, REVIEW_ATTEMPTS + 1)
    ]
    assert all("HTTP 500" in e.error for e in failed)
    assert [e.retry_at is None for e in failed if e.task_id == 1] == [False, False, True]
    # Each attempt is a review run of its own; its failed calls are recorded in it.
    attempts = [
        e
        for task in (1, 2)
        for n in range(1, REVIEW_ATTEMPTS + 1)
        for e in of_type(run_events(workspace, review_run_id(plan_id, task, n)), ModelAttemptFailed)
    ]
    assert len(attempts) == bound and all(e.kind == "server_error" for e in attempts)


def test_plan_start_with_a_failing_review_says_so_and_still_runs_the_next_task(
    workspace: Path,
) -> None:
    ws = str(workspace)
    plan_id = approved_plan(workspace)
    server = ChiefServer(task_review=["prose"])  # never a review
    with remote(workspace, server):
        started = cli("plan", "start", plan_id, "-w", ws, env={"CHIEF_LLM_KEY": KEY})
        shown = cli("plan", "show", plan_id, "-w", ws, env={"CHIEF_LLM_KEY": KEY})
    assert started.returncode == 0, started.stderr
    assert "valid plan" not in started.stderr
    for task in (1, 2):
        assert (
            f"the Chief's review of task {task} was given up after {REVIEW_ATTEMPTS} attempt(s)"
            in started.stderr
        )
    assert "not a valid review" in started.stderr
    assert "plan done" in started.stdout
    events = plan_events(workspace, plan_id)
    assert [(e.task_id, e.outcome) for e in of_type(events, TaskFinished)] == [
        (1, "done"),
        (2, "done"),
    ]
    # Each attempt is three replies (the contract's retries), none of them a review.
    assert server.count("task_review") == 2 * REVIEW_ATTEMPTS * 3
    assert shown.stdout.count(f"Chief review given up after {REVIEW_ATTEMPTS} attempt(s)") == 2
    # The read side says so too (HTTP, the dashboard), and no longer lists the plan as
    # waiting for reviews (the server would reload it on every pass).
    ctx = Context.open(workspace)
    try:
        with Views.for_store(ctx.store, ctx.workspace.root) as views:
            views.catch_up()
            detail = views.plans.plan(plan_id)
            assert views.plans.unreviewed() == []
    finally:
        ctx.close()
    for task in detail.tasks:
        assert task.review_failures == REVIEW_ATTEMPTS
        assert task.review_given_up and "not a valid review" in task.review_given_up


# -- conference rounds --------------------------------------------------------------------------


def test_a_conference_role_rate_limited_once_answers_on_the_retry(workspace: Path) -> None:
    server = ChiefServer(**{"": ["429", "ok"]})
    with remote(workspace, server, "critic"):
        ctx = Context.open(workspace)
        try:
            conference = asyncio.run(
                ConferenceService(ctx).run(RoundRequest("Is Kael consistent?", ["critic"], []))
            )
            events = list(ctx.store.stream(conference.id))
        finally:
            ctx.close()
    assert isinstance(conference.replies["critic"], ReplyAccepted), conference.replies
    assert server.count("") == 2
    [failed] = of_type(events, AgentAttemptFailed)
    assert (failed.role, failed.kind, failed.status, failed.will_retry) == (
        "critic",
        "rate_limited",
        429,
        True,
    )
    assert isinstance(conference, ConferenceRound)


def test_a_conference_whose_chief_server_keeps_failing_fails_its_round_and_run(
    workspace: Path,
) -> None:
    from tests.live import read_sse

    server = ChiefServer(tool_choice=["500"])
    with (
        remote(workspace, server),
        live_server(workspace) as base,
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        answer = client.post(
            "/api/conferences", json={"question": "Is Kael consistent?", "roles": ["critic"]}
        )
        assert answer.status_code == 202, answer.text  # answered at once: the round is a run
        begun = answer.json()
        messages = read_sse(client, f"/api/conferences/{begun['round_id']}/events")
        assert messages[-1]["event"] == "RoundFailed"
        detail = client.get(f"/api/conferences/{begun['round_id']}").json()
        run = client.get(f"/api/runs/{begun['run_id']}").json()
    assert detail["status"] == "failed" and "500" in detail["error"]
    assert run["status"] == "failed" and "500" in run["error"]
    assert server.count("tool_choice") == CALLS_PER_ATTEMPT  # the engine's retries, bounded
