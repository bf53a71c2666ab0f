"""The model-client port: every call names its provider and model explicitly."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlroom.domain.run_events import TokenUsage

#: Receives partial output as a streaming provider generates it.
TextSink = Callable[[str], None]


@dataclass(frozen=True)
class ModelRequest:
    provider: str
    model: str
    tier: str
    agent_archetype: str
    prompt_type: str
    #: The user message: the task and the slots (what to do).
    prompt: str
    #: The text each input slot contributed to the prompt (what the agent was shown).
    inputs: Mapping[str, str] = field(default_factory=dict)
    task_description: str = ""
    #: Provider parameters from the role's configuration (temperature, max_tokens, ...).
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The system prompt: the role (who and how), with the output contract if there is one.
    system: str = ""
    #: The reply's JSON Schema, sent as structured output where the provider supports it.
    response_schema: Mapping[str, Any] | None = None
    contract_name: str | None = None


@dataclass(frozen=True)
class ModelResponse:
    text: str
    usage: TokenUsage
    #: The exact body sent for this reply, when it differs from `request_body(request)`
    #: (a server that refused structured output was asked again without it).
    sent: Mapping[str, Any] | None = None


class ModelClient(Protocol):
    """Phase B agents run without tools: one prompt in, one text out.

    Providers raise `ModelCallError` for a failed attempt; retries are the engine's.
    """

    provider: str

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The exact JSON body `complete` sends for `request` (never any key): recorded,
        content-addressed, so an auditor sees precisely what the model was sent."""
        ...

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse: ...


def scrub(text: str, *secrets: str | None) -> str:
    """Remove every secret from a message before it can reach an event, a log or the API."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text[:2000]
