"""The "Write Scene from Outline" playbook (seed 001 PH-3, PH-5): every agent step under a
task packet and a receipt, the writer looping over the outline's beats, guardrails (an
invalid reply retried twice then STOP_HOOK, an undeclared path -> STOP_HOOK), and a loop
killed after any commit resuming without running an item twice."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.issue import IssueOpened
from controlroom.domain.packet_steps import ForEachItemCompleted, PacketIssued, ReceiptRecorded
from controlroom.domain.packets import AgentReceipt, TaskPacket
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import AgentReplyRejected, StopHook
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli
from tests.test_crash_matrix import runs_started

TASK = "write scene 4 beat by beat"


def test_the_playbook_runs_end_to_end_with_a_packet_and_a_receipt_per_agent_call(
    workspace: Path,
) -> None:
    ws = str(workspace)
    result = cli("run", TASK, "-w", ws, "-q")
    assert result.returncode == 0, result.stderr
    (scene,) = (workspace / "Story" / "Scenes").glob("SCN-04-*")
    assert "Kael confronted Orrin" in scene.read_text()
    (run,) = json.loads(cli("runs", "-w", ws, "--json").stdout)
    ctx = Context.open(workspace)
    try:
        events = ctx.store.stream(run["run_id"])
    finally:
        ctx.close()
    packets = [TaskPacket.model_validate(e.packet) for e in events if isinstance(e, PacketIssued)]
    receipts = [
        AgentReceipt.model_validate(e.receipt) for e in events if isinstance(e, ReceiptRecorded)
    ]
    # plan, check, three beats, critique, edit, final check: each a packet and a receipt.
    assert len(packets) == len(receipts) == 8
    assert [r.packet_id for r in receipts] == [p.packet_id for p in packets]
    assert [p.intent for p in packets] == [
        "plan", "check", "write", "write", "write", "critique", "edit", "check",
    ]  # fmt: skip
    assert [p.scope.item_index for p in packets[2:5]] == [0, 1, 2]
    writer = receipts[2]
    assert writer.actor.agent == "writer" and writer.actor.provider == "offline"
    assert writer.inputs_used == ["scene_plan", "item", "item_index", "previous_items"]
    assert [e.index for e in events if isinstance(e, ForEachItemCompleted)] == [0, 1, 2]
    # The audit trail renders them in order, with actor, decision summary and artifacts.
    shown = cli("show", run["run_id"], "--trail", "-w", ws)
    assert shown.returncode == 0, shown.stderr
    kinds = [line.split()[1] for line in shown.stdout.splitlines() if line[:1].isdigit()]
    assert kinds.count("packet") == 8 and kinds.count("receipt") == 8
    assert kinds.count("tool_receipt") == 3 and "writer (offline-deterministic-1)" in shown.stdout


class Scripted:
    """The offline model, except for one prompt type, whose replies are scripted."""

    provider = "offline"

    def __init__(self, prompt_type: str, *replies: str) -> None:
        self.prompt_type, self.replies = prompt_type, list(replies)
        self.offline = OfflineModel()
        self.prompts: list[str] = []

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return self.offline.request_body(request)

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        if request.prompt_type != self.prompt_type or not self.replies:
            return await self.offline.complete(request, on_text)
        self.prompts.append(request.prompt)
        answer = await self.offline.complete(request, None)
        reply = self.replies.pop(0)
        return ModelResponse(text=reply.replace("{OFFLINE}", answer.text), usage=answer.usage)


def run_with(workspace: Path, model: Scripted) -> tuple[Run, list[Any]]:
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest(TASK, {}))))
        Followers(ctx.store).catch_up()
        return run, [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()


def test_an_invalid_receipt_is_asked_again_twice_then_stops_with_stop_hook(
    workspace: Path,
) -> None:
    model = Scripted(
        "critique_scene",
        "The scene is fine.",  # prose, not a receipt
        '```json\n{"output": "x"}\n```',  # fenced, missing every other field
        '{"output": "x", "STOP_HOOK": "false"}',  # wrong types
    )
    run, events = run_with(workspace, model)
    assert run.status == RunStatus.FAILED
    rejected = [e for e in events if isinstance(e, AgentReplyRejected)]
    assert len(rejected) == 3
    assert "Your previous reply was rejected" in model.prompts[2]  # the stricter prompt
    (stop,) = [e for e in events if isinstance(e, StopHook)]
    assert stop.step_id == "critique" and stop.attempts == 3
    issue = [e for e in events if isinstance(e, IssueOpened)]
    assert [i.kind for i in issue] == ["agent_output_invalid"]
    assert not list((workspace / "Story" / "Scenes").glob("SCN-04-*"))  # nothing proceeded


def test_a_receipt_naming_a_path_the_packet_did_not_expect_stops_with_stop_hook(
    workspace: Path,
) -> None:
    def undeclared(text: str) -> str:
        reply = json.loads(text)
        reply["outputs_produced"] = ["Story/Scenes/SCN-09-invented.md"]
        return json.dumps(reply)

    class Inventing(Scripted):
        async def complete(
            self, request: ModelRequest, on_text: TextSink | None = None
        ) -> ModelResponse:
            answer = await self.offline.complete(request, on_text)
            if request.prompt_type == "edit_scene":
                return ModelResponse(text=undeclared(answer.text), usage=answer.usage)
            return answer

    run, events = run_with(workspace, Inventing("none"))
    assert run.status == RunStatus.FAILED
    (stop,) = [e for e in events if isinstance(e, StopHook)]
    assert stop.step_id == "edit"
    assert "SCN-09-invented.md" in stop.errors[0] and "not an expected artifact" in stop.errors[0]
    assert not (workspace / "Story" / "Scenes" / "SCN-09-invented.md").exists()


@pytest.mark.timeout(600)
@pytest.mark.long
def test_a_loop_killed_after_any_commit_never_runs_an_item_twice(tmp_path: Path) -> None:
    n = 0
    outputs: set[str] = set()
    while True:
        n += 1
        workspace = tmp_path / f"ws-{n}"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
        ws = str(workspace)
        killed = cli("run", TASK, "-w", ws, "-q", env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)})
        if killed.returncode != -9:
            assert killed.returncode == 0, killed.stderr
            break
        if runs_started(workspace):
            resumed = cli("resume", "-w", ws, "-q")
            assert resumed.returncode == 0, (n, resumed.stderr)
        else:  # killed before the run was recorded: the user starts it again
            assert cli("run", TASK, "-w", ws, "-q").returncode == 0
        ctx = Context.open(workspace)
        try:
            events = [p.event for p in ctx.store.read_log()]
        finally:
            ctx.close()
        items = Counter(e.index for e in events if isinstance(e, ForEachItemCompleted))
        assert set(items.values()) == {1} and sorted(items) == [0, 1, 2], (n, items)
        (scene,) = (workspace / "Story" / "Scenes").glob("SCN-04-*")
        outputs.add(scene.read_text())
        shutil.rmtree(workspace)
    assert n > 10 and len(outputs) == 1  # the same scene however often it was killed
