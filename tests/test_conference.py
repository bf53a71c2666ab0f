"""Conference rounds through the application, the CLI and HTTP: evidence gathered under the
round's tool policy, every role interpreting the same evidence at once, rejected replies with
their reasons, T1 agents making three recorded calls, the transcript saved as an issue."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.domain.conference import (
    AgentCallRecorded,
    ConferenceRound,
    ReplyAccepted,
    ReplyRejected,
    ToolCallRefused,
)
from controlroom.domain.errors import BadInputError
from controlroom.domain.issue import Issue
from controlroom.domain.run_events import TokenUsage
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.models.agents import AgentDirectory
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from tests.live import live_server, read_sse
from tests.test_cli_e2e import cli

QUESTION = "Is Kael consistent with his canon card?"
ROLES = ["continuity", "critic", "planner", "editor"]


class Scripted:
    """The offline model, with some replies scripted by (role, prompt type)."""

    provider = "offline"

    def __init__(
        self, scripts: dict[tuple[str, str], list[str]], delay: dict[str, float] | None = None
    ) -> None:
        self.scripts, self.delay = scripts, delay or {}
        self.offline = OfflineModel()

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return self.offline.request_body(request)

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        await asyncio.sleep(self.delay.get(request.agent_archetype, 0))
        script = self.scripts.get((request.agent_archetype, request.prompt_type))
        if script:
            return ModelResponse(text=script.pop(0), usage=TokenUsage())
        return await self.offline.complete(request, on_text)


def run_round(ctx: Context, request: RoundRequest) -> ConferenceRound:
    conference = asyncio.run(ConferenceService(ctx).run(request))
    Followers(ctx.store).catch_up()
    found = ctx.store.load(ConferenceRound, conference.id)
    assert found is not None
    return found


def test_a_round_gathers_evidence_and_every_role_answers_grounded(ctx: Context) -> None:
    conference = run_round(ctx, RoundRequest(QUESTION, ROLES, [], require_tool=True))
    assert [r.tool for r in conference.receipts.values()] == ["file_locator", "canon_checker"]
    replies = conference.replies
    assert all(isinstance(replies[r], ReplyAccepted) for r in ROLES)
    assert "rcpt_" in replies["continuity"].text and '"His green eyes"' in replies["critic"].text
    assert conference.status == "closed" and conference.issue_id
    issue = ctx.store.load(Issue, conference.issue_id)
    assert issue is not None and issue.title.startswith("Conference:")
    events = ctx.store.stream(conference.issue_id)
    assert sorted(events[0].evidence["receipts"]) == sorted(conference.receipts)  # type: ignore[attr-defined]


def test_bad_replies_are_rejected_with_their_reasons_and_kept_in_the_transcript(
    workspace: Path,
) -> None:
    scripts = {
        ("continuity", "conference_interpret"): ["Green.\nEvidence: receipt_id: rcpt_nothere"],
        ("critic", "conference_interpret"): [
            'Odd.\nEvidence: file: Story/Scenes/SCN-02-the-ambush.md "His blue eyes"'
        ],
        ("planner", "conference_interpret"): ["Go.\nEvidence: question\nEvidence: question"],
        ("editor", "conference_interpret"): ["Fine.\nEvidence: question"],
    }
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": Scripted(scripts)}))
    try:
        conference = run_round(ctx, RoundRequest(QUESTION, ROLES, []))
    finally:
        ctx.close()
    reasons = {
        role: reply.reason
        for role, reply in conference.replies.items()
        if isinstance(reply, ReplyRejected)
    }
    assert "not a receipt of this round" in reasons["continuity"]
    assert "is not in Story/Scenes/SCN-02-the-ambush.md" in reasons["critic"]
    assert "exactly one Evidence" in reasons["planner"]
    assert "editor role may cite file" in reasons["editor"]
    assert "rejected: " in conference.transcript() and "rcpt_nothere" in conference.transcript()


def test_a_tool_outside_the_allowed_list_is_refused_and_recorded(workspace: Path) -> None:
    choices = [
        json.dumps({"tool": "prose_analyzer", "args": {}, "reason": "try"}),
        json.dumps({"tool": None, "args": {}, "reason": "done"}),
    ]
    model = Scripted({("chief", "conference_tools"): choices})
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        conference = run_round(ctx, RoundRequest(QUESTION, ["continuity"], ["file_locator"]))
        refused = [e for e in ctx.store.stream(conference.id) if isinstance(e, ToolCallRefused)]
    finally:
        ctx.close()
    assert [(r.tool, r.reason) for r in refused] == [
        ("prose_analyzer", "not among the round's allowed tools")
    ]
    assert conference.receipts == {}


def test_require_tool_asks_again_then_fails_the_round_if_no_tool_is_called(
    workspace: Path,
) -> None:
    none = json.dumps({"tool": None, "args": {}, "reason": "no"})
    model = Scripted({("chief", "conference_tools"): [none, none, none]})
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        with pytest.raises(BadInputError, match="requires a tool call"):
            asyncio.run(
                ConferenceService(ctx).run(RoundRequest(QUESTION, ["continuity"], [], True))
            )
    finally:
        ctx.close()


def test_t1_agents_make_three_recorded_calls_and_order_of_finishing_changes_nothing(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_TIER", "t1")
    recorded = []
    for delays in ({"continuity": 0.2}, {"critic": 0.2}):
        ctx = Context.open(
            workspace, agents=AgentDirectory(clients={"offline": Scripted({}, delays)})
        )
        try:
            conference = run_round(ctx, RoundRequest(QUESTION, ["continuity", "critic"], []))
            calls = [e for e in ctx.store.stream(conference.id) if isinstance(e, AgentCallRecorded)]
        finally:
            ctx.close()
        # The Chief's tool choices come first, on the record like every call; then each
        # role's calls, recorded as its turn ends (so a resumed round asks it nothing again).
        chief = [c for c in calls if c.role == "chief"]
        assert chief and {c.micro_step for c in chief} == {"tool_choice"}
        assert calls[: len(chief)] == chief
        for role in ("continuity", "critic"):
            assert [c.micro_step for c in calls if c.role == role] == [
                "triage",
                "finding",
                "evidence",
            ]
        finished_first = "critic" if "continuity" in delays else "continuity"
        assert calls[len(chief)].role == finished_first
        # The same replies whoever finished first (receipt ids are new in every round).
        recorded.append(
            [
                (role, re.sub(r"rcpt_\w+", "rcpt_", conference.replies[role].text))
                for role in conference.roles
            ]
        )
    assert recorded[0] == recorded[1]


def test_a_round_from_the_cli(workspace: Path) -> None:
    ws = str(workspace)
    done = cli("conference", QUESTION, "--roles", "continuity,critic", "--require-tool", "-w", ws)
    assert done.returncode == 0, done.stderr
    assert "✓ canon_checker" in done.stderr and "continuity accepted" in done.stdout
    assert "transcript saved as issue" in done.stdout
    bad = cli("conference", QUESTION, "--allow-tools", "nope", "-w", ws)
    assert bad.returncode == 64 and "unknown tool(s) in --allow-tools: nope" in bad.stderr
    listed = json.loads(cli("conference", "--list", "-w", ws, "--json").stdout)
    assert len(listed) == 1 and listed[0]["accepted"] == 2
    rows = json.loads(
        cli("analytics", "SELECT status, receipts, accepted FROM conference_rounds", "-w", ws,
            "--json").stdout
    )  # fmt: skip
    assert rows["rows"] == [["closed", 2, 2]]


def test_a_round_over_http_with_its_live_feed(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        started = client.post("/api/conferences", json={"question": QUESTION, "roles": ROLES})
        # Answered at once: the round is a run, executed by the server's executor.
        assert started.status_code == 202, started.text
        begun = started.json()
        assert begun["status"] == "open" and begun["run_id"].startswith("run_")
        messages = read_sse(client, f"/api/conferences/{begun['round_id']}/events")
        assert messages[-1]["event"] == "RoundClosed"
        detail = client.get(f"/api/conferences/{begun['round_id']}").json()
        assert [r["status"] for r in detail["replies"]] == ["accepted"] * 4
        run = client.get(f"/api/runs/{begun['run_id']}").json()
        assert (run["recipe_id"], run["status"]) == ("conference_round", "done")
        assert {m["event"] for m in messages} >= {"EvidenceReceipt", "ReplyAccepted"}
        last = messages[-1]["id"]
        after = read_sse(
            client, f"/api/conferences/{detail['round_id']}/events", {"Last-Event-ID": last}
        )
        assert after == []
        assert client.get("/api/conferences/conf_nope").status_code == 404
        bad = client.post("/api/conferences", json={"question": " ", "roles": ["a", "a"]})
        assert bad.status_code == 400
        assert len(client.get("/api/conferences").json()) == 1
