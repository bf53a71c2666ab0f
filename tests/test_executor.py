"""The executor inside the server: a slow tool in one run never holds up another run's
live feed, because tools and store work run off the event loop."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import httpx

from controlroom.api.app import create_app
from controlroom.engine.context import Context
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override
from tests.live import read_sse, serve_app


class SlowArgs(ToolArgs):
    pass


class SlowTool:
    """Blocks its thread until released (or 20 s pass), like a tool crunching a manuscript."""

    name: ClassVar[str] = "slow_tool"
    description: ClassVar[str] = "blocks until released"
    args_model: ClassVar[type[ToolArgs]] = SlowArgs
    #: It blocks: in a worker thread, as a tool crunching a manuscript would be.
    slow: ClassVar[bool] = True
    release = threading.Event()

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        SlowTool.release.wait(timeout=20)
        return ToolResult(output={"ok": True}, summary="slow tool finished")


SLOW_RECIPE = {
    "recipe_id": "slow",
    "phase_a": [{"step_id": "crunch", "tool": "slow_tool", "output_slot": "crunched"}],
}


def test_a_slow_tool_in_one_run_does_not_delay_another_runs_live_feed(workspace: Path) -> None:
    write_override(workspace, "slow.json", json.dumps(SLOW_RECIPE))
    tools = ToolRegistry.default(with_plugins=False).with_tools(SlowTool())
    ctx = Context.open(workspace, tools=tools)
    SlowTool.release.clear()
    try:
        with (
            serve_app(create_app(ctx)) as base,
            httpx.Client(base_url=base, timeout=30) as client,
        ):
            slow = client.post("/api/runs", json={"recipe_id": "slow"}).json()["run_id"]
            fast = client.post("/api/runs", json={"task": "Draft scene 4 from the outline"})
            fast_id = fast.json()["run_id"]
            started = time.monotonic()
            events = read_sse(client, f"/api/runs/{fast_id}/events")
            # The other run's whole feed arrived, ending with its final event, while the
            # slow tool still holds its thread.
            assert events[-1]["event"] == "RunCompleted"
            assert not SlowTool.release.is_set()
            slow_view = client.get(f"/api/runs/{slow}").json()
            assert slow_view["status"] == "running"
            assert [s["status"] for s in slow_view["steps"]] == ["running"]
            print(f"fast run's feed complete after {time.monotonic() - started:.2f} s")
            SlowTool.release.set()
            tail = read_sse(client, f"/api/runs/{slow}/events")
            assert tail[-1]["event"] == "RunCompleted"
    finally:
        SlowTool.release.set()
        ctx.close()
