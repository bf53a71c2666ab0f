"""Cheap tools run inline in the step loop; a tool that declares itself slow (every bundled
tool: they read the workspace) runs in a worker thread, where it can be stopped."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, ClassVar

from controlroom.domain.run import RunStatus
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult
from controlroom.tools.builtin import BUILTIN_TOOLS
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override


class NoArgs(ToolArgs):
    pass


class ThreadNoting:
    """Notes the thread each call ran in."""

    name: ClassVar[str] = "noting"
    description: ClassVar[str] = "notes its thread"
    args_model: ClassVar[type[ToolArgs]] = NoArgs
    threads: ClassVar[list[str]] = []

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        self.threads.append(threading.current_thread().name)
        return ToolResult(output={"thread": threading.current_thread().name}, summary="noted")


class SlowNoting(ThreadNoting):
    name: ClassVar[str] = "slow_noting"
    slow: ClassVar[bool] = True


def test_a_cheap_tool_runs_in_the_loop_and_a_slow_one_in_a_worker_thread(
    workspace: Path,
) -> None:
    recipe = {
        "recipe_id": "noting",
        "phase_a": [
            {"step_id": "cheap", "tool": "noting", "output_slot": "a"},
            {"step_id": "slow", "tool": "slow_noting", "output_slot": "b"},
        ],
    }
    write_override(workspace, "noting.json", json.dumps(recipe))
    tools = ToolRegistry.default(with_plugins=False).with_tools(ThreadNoting(), SlowNoting())
    ctx = Context.open(workspace, tools=tools)
    ThreadNoting.threads.clear()
    try:
        service = RunService(ctx)

        async def main() -> tuple[Any, str]:
            run = await service.execute(service.start(RunRequest("noting", {})))
            return run, threading.current_thread().name

        run, loop_thread = asyncio.run(main())
        assert run.status == RunStatus.DONE, run.error
        cheap, slow = ThreadNoting.threads
        assert cheap == loop_thread and slow != loop_thread
    finally:
        ctx.close()


def test_every_bundled_tool_reads_the_workspace_in_a_worker_thread() -> None:
    registry = ToolRegistry.default(with_plugins=False)
    assert all(registry.is_slow(tool.name) for tool in BUILTIN_TOOLS)
    assert registry.is_slow("no_such_tool")
