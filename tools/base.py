"""The tool port: what a phase A tool is, and the registry that runs them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from controlroom.domain.errors import ToolError, UnknownToolError

# A long tool calls `checkpoint()` in its loops: where it stops when its run is being
# stopped (every workspace read and listed folder is one already). See tools/stopping.py.
from controlroom.tools.stopping import ToolStoppedError as ToolStoppedError
from controlroom.tools.stopping import checkpoint as checkpoint
from controlroom.tools.workspace import Workspace

ENTRY_POINT_GROUP = "controlroom.tools"


class ToolArgs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class ToolResult:
    output: dict[str, Any]
    summary: str


class Tool(Protocol):
    """A phase A tool. One that may take long or block — reads the workspace, calls out,
    computes for more than a moment — declares `slow = True` (a class attribute, optional):
    it runs in a worker thread, so it never stalls the event loop and the live feeds of other
    runs, and stops at its next checkpoint when its run is stopped (tools/stopping.py). Any
    other tool runs inline in the step loop: a thread hop costs more than its work."""

    name: ClassVar[str]
    description: ClassVar[str]
    args_model: ClassVar[type[ToolArgs]]

    def run(self, args: Any, workspace: Workspace) -> ToolResult: ...


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._tools[tool.name] = tool

    @classmethod
    def default(cls, with_plugins: bool = True) -> ToolRegistry:
        from controlroom.tools.builtin import BUILTIN_TOOLS

        tools: list[Tool] = [tool() for tool in BUILTIN_TOOLS]
        if with_plugins:
            tools.extend(load_plugins())
        return cls(tools)

    def with_tools(self, *tools: Tool) -> ToolRegistry:
        """These tools and the given ones (a given tool replaces one of the same name)."""
        return ToolRegistry([*self._tools.values(), *tools])

    def names(self) -> list[str]:
        return sorted(self._tools)

    def is_slow(self, name: str) -> bool:
        """Whether the tool runs in a worker thread (see `Tool`); an unknown tool does, and
        fails there as it would inline."""
        tool = self._tools.get(name)
        return tool is None or bool(getattr(tool, "slow", False))

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(name) from None

    def execute(self, name: str, raw_args: dict[str, Any], workspace: Workspace) -> ToolResult:
        tool = self.get(name)
        try:
            args = tool.args_model.model_validate(raw_args)
        except ValidationError as exc:
            problems = "; ".join(
                f"arg '{'.'.join(str(p) for p in err['loc']) or '?'}': {err['msg']}"
                for err in exc.errors()
            )
            raise ToolError(name, f"bad arguments: {problems}") from None
        return tool.run(args, workspace)


def load_plugins() -> list[Tool]:
    """Third-party tools registered under the `controlroom.tools` entry-point group.

    An entry point names a tool class (instantiated with no arguments) or an instance.
    """
    found: list[Tool] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        tool = loaded() if isinstance(loaded, type) else loaded
        for attribute in ("name", "args_model", "run"):
            if not hasattr(tool, attribute):
                raise ToolError(entry.name, f"plugin {entry.value} has no '{attribute}'")
        found.append(tool)
    return found
