"""The model-client port: every call names its provider and model explicitly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from domain.run_events import TokenUsage


@dataclass(frozen=True)
class ModelRequest:
    provider: str
    model: str
    tier: str
    agent_archetype: str
    prompt_type: str
    prompt: str
    #: The text each input slot contributed to the prompt (what the agent was shown).
    inputs: Mapping[str, str] = field(default_factory=dict)
    task_description: str = ""


@dataclass(frozen=True)
class ModelResponse:
    text: str
    usage: TokenUsage


class ModelClient(Protocol):
    """Phase B agents run without tools: one prompt in, one text out."""

    provider: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...
