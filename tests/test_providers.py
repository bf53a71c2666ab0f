"""Real providers against local servers that speak each API; no test reaches the internet."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.domain.errors import ModelCallError, ModelConfigError, ReplyCutError
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import AgentResponded, ModelAttemptFailed, StepFailed
from controlroom.engine.context import Context
from controlroom.engine.model_call import Retrying
from controlroom.engine.runner import failure_kind
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.config import ProviderConfig
from controlroom.models.openai_compat import OpenAICompatibleModel
from controlroom.models.port import ModelRequest
from tests.fake_llm import REPLY, Script, anthropic_app, openai_app, serve
from tests.live import live_server, read_sse

KEY = "sk-test-4f9c2e71b8d5a6039e1f"
CLI = str(Path(sys.executable).parent / "controlroom")


def configure(workspace: Path, kind: str, base_url: str, **provider: Any) -> None:
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "remote": {
                        "type": kind,
                        "base_url": base_url,
                        "api_key_env": "REMOTE_LLM_KEY",
                        "timeout_s": 5,
                        "max_retries": 2,
                        "backoff_s": 0.01,
                        "prices": {"house-model": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}},
                        **provider,
                    }
                },
                "roles": {
                    "writer": {
                        "provider": "remote",
                        "model": "house-model",
                        "tier": "t5",
                        "params": {"temperature": 0.2},
                    }
                },
            }
        )
    )


@contextmanager
def fake(kind: str, *behaviours: str) -> Iterator[tuple[str, Script]]:
    script = Script(list(behaviours))
    app = openai_app(script) if kind == "openai" else anthropic_app(script)
    with serve(app) as base:
        yield f"{base}/v1" if kind == "openai" else base, script


def draft(workspace: Path) -> tuple[Run, list[Any]]:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    events = ctx.store.stream(run.id)
    ctx.close()
    return run, events


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMOTE_LLM_KEY", KEY)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_writer_on_a_real_provider_completes_the_run(workspace: Path, kind: str) -> None:
    with fake(kind, "ok") as (base, script):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    writer = next(
        e for e in events if isinstance(e, AgentResponded) and e.agent_archetype == "writer"
    )
    assert (writer.provider, writer.model, writer.tier) == ("remote", "house-model", "t5")
    assert writer.output.strip() == REPLY
    expected_usage = (321, 17) if kind == "openai" else (250, 19)
    assert (writer.usage.input_tokens, writer.usage.output_tokens) == expected_usage
    assert writer.cost_usd == pytest.approx((expected_usage[0] * 2 + expected_usage[1] * 10) / 1e6)
    assert writer.attempts == 1 and writer.latency_ms > 0
    request = script.requests[0]
    assert request["body"]["model"] == "house-model"
    assert request["body"]["temperature"] == 0.2
    assert "draft" in json.dumps(request["body"]["messages"]).lower()
    header = request["headers"].get("authorization") or request["headers"].get("x-api-key")
    assert KEY in header
    others = [e for e in events if isinstance(e, AgentResponded) and e.agent_archetype != "writer"]
    assert {e.provider for e in others} == {"offline"}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_rate_limit_is_retried_and_each_attempt_recorded(workspace: Path, kind: str) -> None:
    with fake(kind, "429", "ok") as (base, script):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.DONE and len(script.requests) == 2
    attempts = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(a.attempt, a.kind, a.status, a.will_retry) for a in attempts] == [
        (1, "rate_limited", 429, True)
    ]
    writer = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert writer.attempts == 2


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_server_errors_until_retries_run_out_fail_the_step(workspace: Path, kind: str) -> None:
    with fake(kind, "500") as (base, script):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED
    assert "after 3 attempt(s)" in (run.error or "") and "server_error" in (run.error or "")
    attempts = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(a.attempt, a.will_retry) for a in attempts] == [(1, True), (2, True), (3, False)]
    assert [a.retry_in_s for a in attempts] == [0.01, 0.02, 0.0]
    assert len(script.requests) == 3
    assert not any(isinstance(e, AgentResponded) and e.step_id == "draft" for e in events)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_hangs_times_out(workspace: Path, kind: str) -> None:
    with fake(kind, "hang") as (base, _):
        configure(workspace, kind, base, timeout_s=0.3, max_retries=1)
        started = time.monotonic()
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED and "timeout" in (run.error or "")
    assert time.monotonic() - started < 10
    assert [a.kind for a in events if isinstance(a, ModelAttemptFailed)] == ["timeout"] * 2


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("malformed", "malformed response"),
        ("length", "cut off at the token limit"),
        ("empty", "the reply was empty"),
    ],
)
def test_unusable_replies_fail_with_a_clear_reason_and_no_retry(
    workspace: Path, kind: str, behaviour: str, reason: str
) -> None:
    with fake(kind, behaviour) as (base, script):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED and reason in (run.error or "")
    assert len(script.requests) == 1
    assert [a.kind for a in events if isinstance(a, ModelAttemptFailed)] == ["unusable"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_reply_cut_at_the_token_limit_fails_the_step_naming_the_limit(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "length") as (base, script):
        configure(workspace, kind, base)
        path = workspace / ".control-room" / "models.json"
        config = json.loads(path.read_text())
        config["roles"]["writer"]["params"]["max_tokens"] = 64
        path.write_text(json.dumps(config))
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED and script.requests[0]["body"]["max_tokens"] == 64
    (failed,) = [e for e in events if isinstance(e, StepFailed)]
    assert failed.step_id == "draft" and failed.error_type == "ReplyCutError"
    reason = "finish_reason=length" if kind == "openai" else "stop_reason=max_tokens"
    assert f"cut off at the token limit (max_tokens 64, {reason})" in failed.error
    assert [a.kind for a in events if isinstance(a, ModelAttemptFailed)] == ["unusable"]
    assert not any(isinstance(e, AgentResponded) and e.step_id == "draft" for e in events)


def test_a_script_gives_each_named_model_its_own_behaviours_and_the_engine_tells_them_apart() -> (
    None
):
    script = Script(["ok"], by_model={"bad-model": ["500"], "cut-model": ["length", "ok"]})
    with serve(openai_app(script)) as base:
        config = ProviderConfig(
            type="openai",
            base_url=f"{base}/v1",
            api_key_env="REMOTE_LLM_KEY",
            max_retries=1,
            backoff_s=0.01,
        )
        client = OpenAICompatibleModel("remote", config)

        def call(model: str) -> str:
            retrying = Retrying(
                client,
                config,
                deadline_s=10,
                caller="agent 'writer'",
                provider="remote",
                model=model,
            )
            request = ModelRequest(
                provider="remote",
                model=model,
                tier="t3",
                agent_archetype="writer",
                prompt_type="draft_scene",
                prompt="Draft the scene.",
                params={"max_tokens": 64},
            )
            return asyncio.run(retrying.reply(request))[0].text

        assert call("house-model") == REPLY
        with pytest.raises(ModelCallError) as bad:
            call("bad-model")
        with pytest.raises(ReplyCutError) as cut:
            call("cut-model")
        assert call("cut-model") == REPLY  # its own list, in its own order
        assert call("house-model") == REPLY
    assert (bad.value.kind, bad.value.status, failure_kind(bad.value)) == (
        "server_error",
        500,
        "transport",
    )
    assert "failed after 2 attempt(s)" in str(bad.value)
    assert cut.value.max_tokens == 64 and failure_kind(cut.value) == "transport"
    assert cut.value.usage is not None and cut.value.usage.output_tokens == 17
    models = [r["body"]["model"] for r in script.requests]
    assert models == [
        "house-model",
        "bad-model",
        "bad-model",
        "cut-model",
        "cut-model",
        "house-model",
    ]
    assert script.served == {None: 2, "bad-model": 2, "cut-model": 2}


def test_the_key_never_reaches_events_views_logs_or_the_api(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake("openai", "429", "ok") as (base, script):
        configure(workspace, "openai", base)
        with live_server(workspace) as api, httpx.Client(base_url=api, timeout=30) as client:
            run_id = client.post("/api/runs", json={"task": "Draft scene 4"}).json()["run_id"]
            feed = json.dumps(read_sse(client, f"/api/runs/{run_id}/events"))
            responses = [
                client.get(path).text
                for path in (
                    f"/api/runs/{run_id}",
                    f"/api/runs/{run_id}/steps",
                    f"/api/runs/{run_id}/audit",
                    "/api/runs",
                    "/api/issues",
                )
            ]
    assert KEY in script.requests[0]["headers"]["authorization"]  # it was really used
    stored = b"".join(p.read_bytes() for p in (workspace / ".control-room").glob("*.sqlite*"))
    assert stored and KEY.encode() not in stored
    assert KEY not in feed and all(KEY not in r for r in responses)
    assert KEY not in caplog.text


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_key_echoed_in_an_error_message_is_scrubbed(workspace: Path, kind: str) -> None:
    with fake(kind, "500") as (base, _):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED and "boom for" in (run.error or "")
    attempts = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert all("***" in a.message for a in attempts)
    assert KEY not in json.dumps([e.model_dump(mode="json") for e in events])


def test_a_role_whose_model_cannot_be_resolved_stops_the_run_before_it_starts(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(workspace, "openai", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("REMOTE_LLM_KEY")
    ctx = Context.open(workspace)
    with pytest.raises(ModelConfigError, match="REMOTE_LLM_KEY"):
        RunService(ctx).start(RunRequest("Draft scene 4", {}))
    assert ctx.store.max_position() == 0
    monkeypatch.setenv("CONTROLROOM_MODEL_WRITER", "nowhere:some-model")
    with pytest.raises(ModelConfigError, match="provider 'nowhere'"):
        RunService(ctx).start(RunRequest("Draft scene 4", {}))
    assert ctx.store.max_position() == 0


def test_models_check_shows_each_role_and_refuses_a_broken_file(workspace: Path) -> None:
    configure(workspace, "anthropic", "http://127.0.0.1:9")
    shown = subprocess.run(
        [CLI, "models", "check", "-w", str(workspace), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    rows = {r["role"]: r for r in json.loads(shown.stdout)}
    assert rows["writer"]["provider"] == "remote" and rows["writer"]["tier"] == "t5"
    assert rows["critic"]["provider"] == "offline"
    (workspace / ".control-room" / "models.json").write_text(
        json.dumps({"roles": {"writer": {"provider": "remote", "model": "m", "tier": "t9"}}})
    )
    broken = subprocess.run(
        [CLI, "models", "check", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert broken.returncode == 64 and "$.roles.writer.tier" in broken.stderr


def test_cancelling_a_run_stops_its_in_flight_model_call(workspace: Path) -> None:
    with fake("openai", "hang") as (base, script):
        configure(workspace, "openai", base, timeout_s=60)
        with live_server(workspace) as api, httpx.Client(base_url=api, timeout=30) as client:
            run_id = client.post("/api/runs", json={"task": "Draft scene 4"}).json()["run_id"]
            deadline = time.monotonic() + 20
            while len(script.requests) == 0:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            started = time.monotonic()
            assert client.post(f"/api/runs/{run_id}/cancel").status_code == 200
            events = read_sse(client, f"/api/runs/{run_id}/events")
            assert time.monotonic() - started < 5
    assert events[-1]["event"] == "RunCancelled"
    assert not any(
        m["event"] == "AgentResponded" and m["data"]["data"]["step_id"] == "draft" for m in events
    )


def test_the_models_schema_file_is_generated_from_the_models() -> None:
    from controlroom.models.config import SCHEMA_FILE, render_schema

    assert SCHEMA_FILE.read_text() == render_schema(), (
        "models/models.schema.json is stale: run `controlroom models schema > "
        "models/models.schema.json`"
    )


# -- defects found against third-party servers (LiteLLM, llama.cpp) ---------------------------


def test_anthropic_without_a_key_variable_sends_no_ambient_key_to_its_base_url(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ambient-0000")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "ambient-token-1111")
    with fake("anthropic", "ok") as (base, script):
        configure(workspace, "anthropic", base, api_key_env=None)
        run, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    sent = json.dumps(script.requests[0]["headers"])
    assert "ambient" not in sent


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_cut_before_its_finish_is_a_failed_attempt_and_retried(
    workspace: Path, kind: str
) -> None:
    partials: list[tuple[int, str]] = []
    with fake(kind, "cut", "ok") as (base, _):
        configure(workspace, kind, base)
        ctx = Context.open(workspace)
        service = RunService(ctx)

        def on_partial(*, step_id: str, attempt: int, text: str, **_: object) -> None:
            if step_id == "draft":
                partials.append((attempt, text))

        started = service.start(RunRequest("Draft scene 4", {}))
        run = asyncio.run(service.execute(started, on_partial))
        events = ctx.store.stream(run.id)
        ctx.close()
    assert run.status == RunStatus.DONE, run.error
    failed = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(a.kind, a.will_retry) for a in failed] == [("incomplete", True)]
    writer = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert writer.output.strip() == REPLY and writer.attempts == 2
    assert {a for a, _ in partials} == {1, 2}  # a retry's text is told from the first's
    assert "".join(t for a, t in partials if a == 1).strip() == "The scene begins"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_that_is_always_cut_fails_and_never_completes_the_run(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "cut") as (base, _):
        configure(workspace, kind, base)
        run, _ = draft(workspace)
    assert run.status == RunStatus.FAILED and "incomplete" in (run.error or "")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_error_event_mid_stream_is_retried(workspace: Path, kind: str) -> None:
    with fake(kind, "midstream_error", "ok") as (base, _):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    failed = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(a.kind, a.will_retry) for a in failed] == [("stream_error", True)]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_usage_a_server_does_not_send_is_recorded_as_estimated(workspace: Path, kind: str) -> None:
    with fake(kind, "no_usage") as (base, _):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    writer = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert run.status == RunStatus.DONE and writer.usage.estimated
    assert writer.usage.input_tokens > 0 and writer.usage.output_tokens > 0


def test_input_tokens_a_proxy_reports_at_the_end_of_an_anthropic_stream_are_counted(
    workspace: Path,
) -> None:
    script = Script(["ok"])
    with serve(anthropic_app(script, input_tokens_at_start=0)) as base:
        configure(workspace, "anthropic", base)
        _, events = draft(workspace)
    writer = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert (writer.usage.input_tokens, writer.usage.estimated) == (250, False)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_slow_steady_stream_outlasting_the_idle_timeout_is_not_cut(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "slow") as (base, script):
        configure(workspace, kind, base, timeout_s=0.6)
        started = time.monotonic()
        run, events = draft(workspace)
    assert time.monotonic() - started > 0.6 * 2  # longer than the idle timeout, twice over
    assert run.status == RunStatus.DONE, run.error
    assert len(script.requests) == 1
    assert not any(isinstance(e, ModelAttemptFailed) for e in events)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_ignores_streaming_and_sends_one_body_is_understood(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "whole") as (base, _):
        configure(workspace, kind, base)
        run, events = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    writer = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert writer.output.strip() == REPLY


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_connection_error_names_the_host(workspace: Path, kind: str) -> None:
    base = "http://127.0.0.1:9/v1" if kind == "openai" else "http://127.0.0.1:9"
    configure(workspace, kind, base, max_retries=0)
    run, _ = draft(workspace)
    assert run.status == RunStatus.FAILED and "127.0.0.1:9" in (run.error or "")


def test_a_call_past_its_overall_deadline_is_an_agent_failure_not_retried(
    workspace: Path,
) -> None:
    with fake("openai", "slow") as (base, script):
        configure(workspace, "openai", base, timeout_s=5, deadline_s=0.5)
        run, events = draft(workspace)
    assert run.status == RunStatus.FAILED and "deadline" in (run.error or "")
    assert len(script.requests) == 1
    assert [(a.kind, a.will_retry) for a in events if isinstance(a, ModelAttemptFailed)] == [
        ("deadline", False)
    ]


def test_a_roles_configuration_follows_the_environment_as_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A directory keeps each role's configuration once worked out (a run asks a score of
    times), keyed by the variables that change it: a new override is read, a bad one is
    refused every time it is asked."""
    from controlroom.models.agents import AgentDirectory
    from controlroom.models.config import ModelsConfig, ProviderConfig

    spare = ProviderConfig.model_validate(
        {"type": "offline", "faults": {"flaky-1": {"fault": "prose"}}}
    )
    config = ModelsConfig(providers={"spare": spare})
    agents = AgentDirectory(config)
    monkeypatch.delenv("CONTROLROOM_MODEL_WRITER", raising=False)
    monkeypatch.delenv("CONTROLROOM_MODEL_DEFAULT", raising=False)
    monkeypatch.delenv("CONTROLROOM_TIER", raising=False)
    assert (agents.profile("writer").provider, agents.profile("writer").tier) == ("offline", "t3")
    monkeypatch.setenv("CONTROLROOM_MODEL_WRITER", "spare:flaky-1")
    monkeypatch.setenv("CONTROLROOM_TIER", "t5")
    writer = agents.profile("writer")
    assert (writer.provider, writer.model, writer.tier) == ("spare", "flaky-1", "t5")
    assert agents.profile("editor").provider == "offline"  # another role keeps its own
    monkeypatch.setenv("CONTROLROOM_MODEL_WRITER", "nowhere:model")
    for _ in range(2):
        with pytest.raises(ModelConfigError, match="nowhere"):
            agents.profile("writer")
    monkeypatch.delenv("CONTROLROOM_MODEL_WRITER")
    assert agents.profile("writer").provider == "offline"
