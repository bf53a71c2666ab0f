"""The model-client port: every call names its provider and model explicitly."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlroom.domain.errors import ModelCallError
from controlroom.domain.run_events import TokenUsage

#: Receives partial output as a streaming provider generates it.
TextSink = Callable[[str], None]

#: The longest reply read when the engine names no limit: a quarter of the default event
#: limit (2 MiB), so the reply, stored as JSON text in one event, always fits it.
DEFAULT_MAX_REPLY_CHARS = 512 * 1024


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
    #: Reading stops once the reply passes this many characters (`too_large`, not retried):
    #: the engine sets it from the event limit, since a reply is stored in one event.
    max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS


@dataclass(frozen=True)
class Refusal:
    """A request the server refused for its structured-output parameter (a 4xx), before it
    was asked again without it: a failed attempt of its own, to be recorded as one."""

    body: Mapping[str, Any]
    error: ModelCallError


@dataclass(frozen=True)
class ModelResponse:
    text: str
    usage: TokenUsage
    #: The exact body sent for this reply, when it differs from `request_body(request)`
    #: (a server that refused structured output was asked again without it).
    sent: Mapping[str, Any] | None = None
    #: That refusal, when there was one.
    refused: Refusal | None = None


class FailedAfterRefusal(ModelCallError):
    """The request asked again without structured output failed too: this is that failure,
    and `refused` the refusal before it (both are attempts to record)."""

    def __init__(self, error: ModelCallError, refused: Refusal) -> None:
        ModelCallError.__init__(self, error.kind, "", error.status)
        self.args = error.args
        self.refused = refused
        self.error = error

    def after_retries(self, message: str) -> ModelCallError:
        # The refusal is an attempt reported on its own: the call ends with what followed it.
        return self.error.after_retries(message)


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


def well_formed(text: str) -> str:
    """The text with any lone surrogate (a JSON `\\ud800` a server sent) replaced: it could
    not be hashed, stored or shown as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def scrub(text: str, *secrets: str | None) -> str:
    """Remove every secret from a message before it can reach an event, a log or the API."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text[:2000]
