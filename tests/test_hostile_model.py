"""A hostile or unlucky model: replies too large to hold, nested too deep to parse, longer than
an event keeps, JSON behind a preamble that mentions a list, bold labels, broken tool
choices, servers that refuse structured output, and ambient SDK settings that must not leak
to a third-party server. Each ends as a recorded agent failure or a valid reply, never as an
uncaught exception or a run left `running`."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from controlroom.domain import untrusted_json
from controlroom.domain.canonical import sha256_text
from controlroom.domain.conference import ConferenceRound, ReplyAccepted
from controlroom.domain.errors import BadInputError, ModelCallError, ModelError
from controlroom.domain.evidence import check_reply as check_evidence
from controlroom.domain.issue import IssueOpened
from controlroom.domain.kept_text import KEPT_HEAD, KEPT_TAIL, MAX_ERRORS, kept_reply
from controlroom.domain.plan_errors import ChiefReplyError
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    ModelAttemptFailed,
    StopHook,
    TokenUsage,
)
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.anthropic_api import AnthropicModel
from controlroom.models.config import ProviderConfig
from controlroom.models.openai_compat import OpenAICompatibleModel
from controlroom.models.port import ModelRequest, ModelResponse
from controlroom.prompts.contracts import (
    ContinuityReport,
    Contract,
    check_reply,
    extract_json,
    schema_of,
)
from tests.conftest import sent_bodies
from tests.fake_llm import Script, openai_app, serve
from tests.fakes import RecordingModel
from tests.live import serve_app
from tests.test_conference import QUESTION
from tests.test_conference import Scripted as ScriptedRound
from tests.test_contracts_e2e import configure, draft, fake
from tests.test_plan_engine import ScriptedChief, create, with_model

CONTINUITY = Contract("continuity_report", schema_of(ContinuityReport))
VALID = {"pass": True, "conflicts": [], "facts_checked": 3}
DEEP = "[" * 1500 + "]" * 1500
KEY = "sk-test-hostile-5e6f7a8b9c"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMOTE_LLM_KEY", KEY)


# -- the depth bound and the extractor ------------------------------------------------------------


def test_json_nested_past_the_limit_is_refused_before_it_is_parsed() -> None:
    limit = untrusted_json.MAX_DEPTH
    assert untrusted_json.loads("[" * limit + "]" * limit) is not None
    with pytest.raises(untrusted_json.TooDeepError):
        untrusted_json.loads("[" * (limit + 1) + "]" * (limit + 1))
    with pytest.raises(untrusted_json.TooDeepError):  # not a RecursionError
        untrusted_json.loads(DEEP)
    # Brackets inside strings do not nest.
    assert untrusted_json.loads(json.dumps({"a": "[" * 500})) == {"a": "[" * 500}


@pytest.mark.parametrize("text", ["NaN", '{"n": Infinity}', "[1e999]"])
def test_numbers_json_cannot_hold_are_not_json(text: str) -> None:
    with pytest.raises(ValueError):
        untrusted_json.loads(text)


def test_a_reply_nested_1500_levels_deep_is_an_invalid_reply_not_an_exception() -> None:
    assert check_reply(DEEP, CONTINUITY) == (None, ["$: the JSON is nested deeper than 32 levels"])
    assert check_reply(f"Here it is: {DEEP}", CONTINUITY)[1] == [
        "$: the JSON is nested deeper than 32 levels"
    ]


def test_a_list_in_the_preamble_does_not_hide_the_report_after_it() -> None:
    reply = f"I checked scenes [1, 2, 3] against the canon.\n\n{json.dumps(VALID)}\n\nDone."
    assert check_reply(reply, CONTINUITY) == (VALID, [])
    fenced = f"Scenes [1, 2]:\n```json\n[1, 2]\n```\n```json\n{json.dumps(VALID)}\n```"
    assert check_reply(fenced, CONTINUITY) == (VALID, [])
    # Without a contract, the largest value is the one meant.
    assert extract_json(reply) == VALID


def test_when_nothing_validates_the_errors_are_those_of_the_largest_value() -> None:
    reply = 'I checked scenes [1, 2, 3].\n{"pass": "yes", "conflicts": [], "facts_checked": 3}'
    value, errors = check_reply(reply, CONTINUITY)
    assert value["pass"] == "yes" and errors == ['$.pass: "yes" is not of type boolean']


def test_the_errors_of_a_reply_are_bounded() -> None:
    report = {"pass": True, "conflicts": list(range(5000)), "facts_checked": 1, "x" * 5000: 1}
    _, errors = check_reply(json.dumps(report), CONTINUITY)
    assert len(errors) == MAX_ERRORS + 1 and errors[-1].startswith("… and ")
    assert max(len(e) for e in errors) <= 300


@pytest.mark.parametrize(
    "line",
    [
        "**Evidence:** receipt_id: rcpt_a1_",
        "**Evidence**: receipt_id: rcpt_a1_",
        "__Evidence:__ receipt_id: rcpt_a1_",
        "*Evidence:* receipt_id: rcpt_a1_",
        "**Evidence: receipt_id: rcpt_a1_**",
        "**Evidence:**\nreceipt_id: rcpt_a1_",
        "Evidence: receipt_id: rcpt_a1_",
    ],
)
def test_an_evidence_line_in_markdown_bold_is_read_like_a_plain_one(line: str) -> None:
    verdict = check_evidence(
        f"Kael's eyes change colour.\n{line}", "continuity", ["rcpt_a1_"], {}.get
    )
    assert verdict.accepted, verdict.reason
    assert [c.ref for c in verdict.citations] == ["rcpt_a1_"]


def test_many_blank_lines_are_read_in_linear_time() -> None:
    verdict = check_evidence("\n" * 300_000, "continuity", [], {}.get)  # seconds, not hours
    assert not verdict.accepted


def test_a_long_reply_is_kept_by_its_head_and_tail_with_the_digest_of_the_whole() -> None:
    reply = "a" * KEPT_HEAD + "b" * 100_000 + "c" * KEPT_TAIL
    kept, digest = kept_reply(reply)
    assert kept.startswith("a" * KEPT_HEAD) and kept.endswith("c" * KEPT_TAIL)
    assert len(kept) < KEPT_HEAD + KEPT_TAIL + 200 and "100,000 characters not kept" in kept
    assert digest is not None and (digest.chars, digest.sha256) == (len(reply), sha256_text(reply))
    assert kept_reply("short") == ("short", None)


# -- through the engine, with scripted replies ---------------------------------------------------


class ScriptedReplies(RecordingModel):
    """The offline model, with the replies to some prompt types scripted (the last repeats)."""

    def __init__(self, **replies: str) -> None:
        super().__init__()
        self.replies = replies
        self.asked: list[str] = []

    async def complete(self, request: ModelRequest, on_text: Any = None) -> ModelResponse:
        scripted = self.replies.get(request.prompt_type)
        if scripted is None:
            return await super().complete(request, on_text)
        self.asked.append(request.prompt_type)
        return ModelResponse(scripted, TokenUsage(input_tokens=10, output_tokens=10))


def run_draft(workspace: Path, model: RecordingModel) -> tuple[Context, Run, list[Any]]:
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    Followers(ctx.store).catch_up()
    return ctx, run, ctx.store.stream(run.id)


def opened_issues(ctx: Context) -> list[IssueOpened]:
    return [p.event for p in ctx.store.read_log() if isinstance(p.event, IssueOpened)]


def test_a_deeply_nested_reply_ends_in_stop_hook_and_an_issue_with_the_run_failed(
    workspace: Path,
) -> None:
    ctx, run, events = run_draft(workspace, ScriptedReplies(check_continuity=DEEP))
    try:
        assert run.status == RunStatus.FAILED and "STOP_HOOK" in (run.error or "")
        stop = next(e for e in events if isinstance(e, StopHook))
        assert stop.errors == ["$: the JSON is nested deeper than 32 levels"]
        assert [i.kind for i in opened_issues(ctx)] == ["agent_output_invalid"]
        # The run reads back (a resume or a feed replays it) and is finished.
        reloaded = ctx.store.load(Run, run.id)
        assert reloaded is not None and reloaded.status == RunStatus.FAILED
    finally:
        ctx.close()


def test_a_deeply_nested_reply_to_a_step_without_a_contract_is_kept_as_text(
    workspace: Path,
) -> None:
    ctx, run, _ = run_draft(workspace, ScriptedReplies(draft_scene=DEEP))
    try:
        assert run.status == RunStatus.DONE, run.error
        reloaded = ctx.store.load(Run, run.id)  # replaying the slot does not recurse away
        assert reloaded is not None and reloaded.slot_values["draft"] == DEEP
    finally:
        ctx.close()


def test_three_huge_invalid_replies_make_a_stop_hook_that_fits_its_event(
    workspace: Path,
) -> None:
    huge = "The draft is fine. " * 37_000  # ~700 KB of prose, three times
    ctx, run, events = run_draft(workspace, ScriptedReplies(check_continuity=huge))
    try:
        assert run.status == RunStatus.FAILED and "STOP_HOOK" in (run.error or "")
        stop = next(e for e in events if isinstance(e, StopHook))
        assert stop.attempts == 3 and len(stop.replies) == 3
        assert all(len(r) < KEPT_HEAD + KEPT_TAIL + 200 for r in stop.replies)
        assert [(d.chars, d.sha256) for d in stop.reply_digests if d] == [
            (len(huge), sha256_text(huge))
        ] * 3
        assert len(stop.stored_json()) < 200_000
        rejected = [e for e in events if isinstance(e, AgentReplyRejected)]
        assert all(
            r.reply_digest is not None and r.reply_digest.chars == len(huge) for r in rejected
        )
        opened = opened_issues(ctx)
        assert [i.kind for i in opened] == ["agent_output_invalid"]
        assert opened[0].evidence["replies"] == stop.replies
    finally:
        ctx.close()


def test_a_valid_reply_is_stored_once_in_its_event(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_MAX_EVENT_BYTES", "400000")
    report = {**VALID, "entities_seen": ["Kael " + "x" * 1000 for _ in range(250)]}
    compact = json.dumps(report, separators=(",", ":"))
    ctx, run, events = run_draft(workspace, ScriptedReplies(check_continuity=compact))
    try:
        assert run.status == RunStatus.DONE, run.error
        reply = next(e for e in events if isinstance(e, AgentResponded) and e.contract)
        # Its output alone fits the event limit; output and the raw reply together would not.
        assert len(reply.stored_json()) < 400_000 < len(reply.output) + len(compact)
        assert json.loads(reply.output) == report and reply.raw_output is None
        assert reply.raw_output_digest is not None
        assert reply.raw_output_digest.sha256 == sha256_text(compact)
    finally:
        ctx.close()


def test_a_preamble_naming_a_list_before_the_report_completes_the_step(workspace: Path) -> None:
    reply = f"I checked scenes [1, 2, 3].\n\n{json.dumps(VALID)}"
    ctx, run, events = run_draft(workspace, ScriptedReplies(check_continuity=reply))
    try:
        assert run.status == RunStatus.DONE, run.error
        responded = next(e for e in events if isinstance(e, AgentResponded) and e.contract)
        assert json.loads(responded.output) == VALID and responded.raw_output == reply
        assert not any(isinstance(e, AgentReplyRejected) for e in events)
    finally:
        ctx.close()


def test_a_deeply_nested_plan_from_the_chief_is_refused_as_not_a_plan(ctx: Context) -> None:
    model = ScriptedChief(DEEP, DEEP, DEEP)
    with pytest.raises(ChiefReplyError, match="nested deeper than 32 levels"):
        create(with_model(ctx, model))


# -- conference rounds -----------------------------------------------------------------------------


def test_a_broken_tool_choice_in_a_round_that_requires_a_tool_is_an_agent_failure(
    workspace: Path,
) -> None:
    model = ScriptedRound({("chief", "conference_tools"): ["I would call file_locator."] * 3})
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        service = ConferenceService(ctx)
        with pytest.raises(ModelError, match="tool_choice contract") as raised:
            asyncio.run(service.run(RoundRequest(QUESTION, ["continuity"], [], True)))
        assert not isinstance(raised.value, BadInputError)
        rounds = [
            p.event.originator_id
            for p in ctx.store.read_log()
            if type(p.event).__name__ == "RoundOpened"
        ]
        conference = ctx.store.load(ConferenceRound, rounds[0])
        assert conference is not None and conference.status == "failed"
    finally:
        ctx.close()


def test_a_bold_evidence_line_is_accepted_in_a_round(workspace: Path) -> None:
    reply = 'Odd.\n**Evidence:** file: Story/Scenes/SCN-02-the-ambush.md "His green eyes"'
    model = ScriptedRound({("critic", "conference_interpret"): [reply]})
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        conference = asyncio.run(ConferenceService(ctx).run(RoundRequest(QUESTION, ["critic"], [])))
    finally:
        ctx.close()
    assert isinstance(conference.replies["critic"], ReplyAccepted)


# -- providers on local servers --------------------------------------------------------------------


def _openai_chunk(content: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n".encode()


def _anthropic_delta(text: str) -> bytes:
    data = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return f"event: content_block_delta\ndata: {json.dumps(data)}\n\n".encode()


_ANTHROPIC_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)


def endless_app(shape: str) -> Starlette:
    """A server whose reply never ends: many small events, one event that never closes, or
    one body that never closes. `sent` counts the bytes it managed to send."""

    async def body(kind: str) -> AsyncIterator[bytes]:
        if shape == "events":
            if kind == "anthropic":
                yield _ANTHROPIC_START
            while True:
                yield (
                    _openai_chunk("x" * 1000) if kind == "openai" else _anthropic_delta("x" * 1000)
                )
                await asyncio.sleep(0)  # let the server notice the client has gone
        elif shape == "deep":  # one event nested too deep for the SDK's parser
            if kind == "anthropic":
                yield _ANTHROPIC_START
            name = b"" if kind == "openai" else b"event: content_block_delta\n"
            yield name + b"data: " + DEEP.encode() + b"\n\n"
        elif shape == "one_event":
            yield b'data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": "'
            while True:
                yield b"x" * 65536
                await asyncio.sleep(0)
        else:
            yield b'{"choices": [{"message": {"content": "'
            while True:
                yield b"x" * 65536
                await asyncio.sleep(0)

    def handler(kind: str) -> Any:
        async def handle(request: Request) -> Response:
            await request.body()
            media = "application/json" if shape == "body" else "text/event-stream"
            return StreamingResponse(body(kind), media_type=media)

        return handle

    return Starlette(
        routes=[
            Route("/v1/chat/completions", handler("openai"), methods=["POST"]),
            Route("/v1/messages", handler("anthropic"), methods=["POST"]),
        ]
    )


def provider(kind: str, base: str, **config: Any) -> OpenAICompatibleModel | AnthropicModel:
    if kind == "openai":
        settings = ProviderConfig(type="openai", base_url=f"{base}/v1", **config)
        return OpenAICompatibleModel("remote", settings)
    return AnthropicModel("remote", ProviderConfig(type="anthropic", base_url=base, **config))


def request(limit: int = 20_000) -> ModelRequest:
    return ModelRequest(
        provider="remote",
        model="m",
        tier="t3",
        agent_archetype="writer",
        prompt_type="draft_scene",
        prompt="Write.",
        max_reply_chars=limit,
    )


@contextmanager
def endless(shape: str) -> Iterator[str]:
    with serve_app(endless_app(shape), log_level="error", force_exit=True) as base:
        yield base


@pytest.mark.parametrize(
    ("kind", "shape"),
    [
        ("openai", "events"),
        ("anthropic", "events"),
        ("openai", "one_event"),
        ("openai", "body"),
        ("anthropic", "body"),
    ],
)
def test_a_reply_that_never_ends_is_read_only_to_the_limit(kind: str, shape: str) -> None:
    with endless(shape) as base:
        model = provider(kind, base, api_key_env="REMOTE_LLM_KEY")
        tracemalloc.start()
        try:
            with pytest.raises(ModelCallError) as raised:
                asyncio.run(asyncio.wait_for(model.complete(request(20_000)), 30))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert raised.value.kind == "too_large" and not raised.value.retryable
    assert "20,000 characters" in str(raised.value)
    assert peak < 16 * 1024 * 1024  # the reply was never held whole (it has no end)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_event_nested_too_deep_fails_the_attempt_as_malformed(kind: str) -> None:
    with endless("deep") as base:
        model = provider(kind, base, api_key_env="REMOTE_LLM_KEY")
        with pytest.raises(ModelCallError) as raised:
            asyncio.run(asyncio.wait_for(model.complete(request()), 30))
    assert raised.value.kind == "unusable" and "malformed" in str(raised.value)


def test_a_too_large_reply_fails_the_step_as_an_agent_failure_not_retried(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_MAX_EVENT_BYTES", "400000")  # replies up to 100,000 chars
    with endless("events") as base:
        configure(workspace, "openai", f"{base}/v1", roles=["writer"])
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.FAILED
    failed = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(f.kind, f.will_retry) for f in failed] == [("too_large", False)]
    assert "100,000 characters" in failed[0].message


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_request_refused_for_structured_output_is_recorded_as_an_attempt(
    workspace: Path, kind: str
) -> None:
    with fake(kind, "refuse_schema") as (base, script):
        configure(workspace, kind, base, roles=["continuity"])
        run, events, _ = draft(workspace)
    assert run.status == RunStatus.DONE, run.error
    first, second = (r["body"] for r in script.requests)
    failed = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(f.attempt, f.kind, f.status, f.will_retry) for f in failed] == [
        (1, "rejected", 400, True)
    ]
    assert "without structured output" in failed[0].message
    recorded = sent_bodies(workspace, events)
    assert recorded[failed[0].request_ref or ""] == first
    reply = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "continuity")
    assert reply.attempts == 2 and recorded[reply.request_ref or ""] == second


def ask(**config: Any) -> dict[str, str]:
    script = Script(["ok"])
    with serve(openai_app(script)) as base:
        model = OpenAICompatibleModel(
            "remote",
            ProviderConfig(
                type="openai", base_url=f"{base}/v1", api_key_env="REMOTE_LLM_KEY", **config
            ),
        )
        asyncio.run(model.complete(request()))
    headers: dict[str, str] = script.requests[0]["headers"]
    return headers


def test_ambient_openai_organization_and_project_never_reach_a_configured_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-ambient")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_ambient")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Vendor-Secret: abc\nX-Other: 1")
    headers = ask()
    assert "openai-organization" not in headers and "openai-project" not in headers
    assert "x-vendor-secret" not in headers and "x-other" not in headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers.get("accept-encoding") == "identity"
    configured = ask(organization="org-mine", project="proj_mine")
    assert configured["openai-organization"] == "org-mine"
    assert configured["openai-project"] == "proj_mine"


def test_a_t1_evidence_line_in_bold_is_read_and_blank_lines_cost_linear_time() -> None:
    from controlroom.domain.micro_steps import check_evidence

    shown = {"draft": "His grey eyes met hers."}
    for line in ('**Evidence:** slot: draft "His grey eyes"', '__Evidence__: draft "grey eyes"'):
        assert check_evidence(f"A finding.\n{line}", shown).verified, line
    # 200,000 blank lines: scanned once, not once per line (a hostile reply stalled here).
    assert not check_evidence("\n" * 200_000 + "no evidence", shown).verified
