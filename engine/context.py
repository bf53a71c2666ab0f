"""Everything the engine needs, wired once (the composition root)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from controlroom.engine.ports import Clock, IdSource, RandomIds, SystemClock
from controlroom.engine.settings import Settings
from controlroom.eventstore.store import EventStore
from controlroom.models.agents import AgentDirectory
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry
from controlroom.tools.workspace import Workspace


@dataclass
class Context:
    workspace: Workspace
    store: EventStore
    tools: ToolRegistry
    prompts: PromptRegistry
    catalog: RecipeCatalog
    agents: AgentDirectory
    settings: Settings = field(default_factory=Settings)
    clock: Clock = field(default_factory=SystemClock)
    ids: IdSource = field(default_factory=RandomIds)

    @classmethod
    def open(
        cls,
        workspace_dir: Path,
        *,
        store: EventStore | None = None,
        agents: AgentDirectory | None = None,
        tools: ToolRegistry | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        settings: Settings | None = None,
    ) -> Context:
        settings = settings or Settings.from_env()
        workspace = Workspace(workspace_dir, max_file_bytes=settings.max_file_bytes)
        tools = tools or ToolRegistry.default()
        prompts = PromptRegistry.for_workspace(workspace.root)
        catalog = RecipeCatalog.load(workspace.root, tools.names(), prompts.prompt_types())
        return cls(
            workspace=workspace,
            store=store
            or EventStore.for_workspace(
                workspace.root,
                settings.store,
                max_event_bytes=settings.max_event_bytes,
                crash_after_commit=settings.crash_after_commit,
            ),
            tools=tools,
            prompts=prompts,
            catalog=catalog,
            agents=agents or AgentDirectory.for_workspace(workspace.root),
            settings=settings,
            clock=clock or SystemClock(),
            ids=ids or RandomIds(),
        )

    def close(self) -> None:
        self.store.close()
