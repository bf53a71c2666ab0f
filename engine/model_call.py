"""One agent's model call: transport retries with backoff, each failed attempt reported,
the exact request recorded, and the price of the answer.

Shared by every caller of a model in a run (a step's call, a T1 agent's micro-calls).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from controlroom.domain.canonical import sha256_json
from controlroom.domain.errors import ControlRoomError, ModelCallError
from controlroom.domain.outcomes import AttemptFailure, AttemptReport, RecordedRequest
from controlroom.domain.run_events import TokenUsage
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.tree_budget import check_before_model_call
from controlroom.models.agents import AgentProfile
from controlroom.models.config import Price, ProviderConfig
from controlroom.models.port import (
    FailedAfterRefusal,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Refusal,
    scrub,
)
from controlroom.prompts.contracts import Contract

AttemptObserver = Callable[[AttemptReport], None]
PartialObserver = Callable[[str, int, str], None]  # (step_id, attempt, text)

#: How many times an invalid reply is asked again (seed 001, C: max 2), then STOP_HOOK.
CONTRACT_RETRIES = 2


def reply_limit(max_event_bytes: int) -> int:
    """The longest reply read, in characters: a quarter of the event limit, since a reply
    is stored as JSON text in one event (quotes escaped, the rest of the event beside it)."""
    return max(1024, max_event_bytes // 4)


def cost_of(price: Price | None, usage: TokenUsage) -> float | None:
    if price is None:
        return None
    return round(
        (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok)
        / 1_000_000,
        6,
    )


def recorded(
    client: ModelClient, request: ModelRequest, body: Mapping[str, Any]
) -> RecordedRequest:
    return RecordedRequest(
        ref="sha256:" + sha256_json(dict(body)),
        provider=client.provider,
        model=request.model,
        body=dict(body),
    )


def body_of(client: ModelClient, request: ModelRequest) -> dict[str, Any]:
    """The provider's exact body; for a client that cannot say, what it was given."""
    build = getattr(client, "request_body", None)
    if build is not None:
        body: dict[str, Any] = build(request)
        return body
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages.append({"role": "user", "content": request.prompt})
    return {"model": request.model, "messages": messages, **request.params}


def stricter(user: str, contract: Contract, errors: list[str]) -> str:
    """The user message of a retry: the task again, and what was wrong with the reply."""
    listed = "\n".join(f"- {e}" for e in errors[:20])
    return (
        f"{user}\n\n## Your previous reply was rejected\n"
        f"It did not satisfy the `{contract.name}` output contract:\n{listed}\n\n"
        "Reply again with exactly one JSON object that validates against the schema in the "
        "system prompt: no prose, no code fence, every required property present, every "
        'value of the declared type (true and false are booleans, not "true" or "false").'
    )


@dataclass
class Retrying:
    """Model calls with the engine's transport retries: a transport fault (429, 5xx, a
    refused connection, an idle timeout, a cut stream) is asked again with exponential
    backoff (`max_retries`, `backoff_s`), each failed attempt reported as it happens; an
    agent failure (4xx, the overall deadline, an unusable reply) is not retried.

    Used by every caller of a model: a recipe step (through `ModelCall`), the Chief's plan
    and reviews, a conference round's calls. `attempt` counts across calls (a contract's
    retries continue the count)."""

    client: ModelClient
    policy: ProviderConfig
    #: The overall limit of one attempt, however steady the stream.
    deadline_s: float
    #: Who is asking, for the error: "agent 'writer' (openai/gpt-4o)".
    caller: str
    provider: str
    model: str
    report: AttemptObserver | None = None
    #: The text sink of each attempt (streamed partial output), by attempt number.
    sink: Callable[[int], Callable[[str], None] | None] | None = None
    attempt: int = 0
    #: Reading a reply stops past this many characters (`reply_limit`); None: the request's.
    max_reply_chars: int | None = None

    @classmethod
    def for_agent(
        cls, ctx: Context, profile: AgentProfile, caller: str, report: AttemptObserver | None
    ) -> Retrying:
        """The retries of one agent's calls, as its provider is configured."""
        policy = ctx.agents.provider_config(profile.provider)
        return cls(
            ctx.agents.client(profile.provider),
            policy,
            deadline_s=ctx.settings.agent_timeout_s or policy.deadline_s,
            caller=caller,
            provider=profile.provider,
            model=profile.model,
            report=report,
            max_reply_chars=reply_limit(ctx.settings.max_event_bytes),
        )

    async def reply(self, request: ModelRequest) -> tuple[ModelResponse, RecordedRequest]:
        """A reply, after transport retries with backoff; each failed attempt reported."""
        deadline = self.deadline_s
        if self.max_reply_chars is not None:
            request = replace(request, max_reply_chars=self.max_reply_chars)
        tries = 0
        while True:
            # A tree's budget is checked before every call, retries included: a call over
            # it is never made (engine/tree_budget.py).
            check_before_model_call()
            self.attempt += 1
            tries += 1
            sent = recorded(self.client, request, body_of(self.client, request))
            sink = self.sink(self.attempt) if self.sink is not None else None
            try:
                # asyncio.timeout, not wait_for: no extra task, so Ctrl-C reaches the runner.
                async with asyncio.timeout(deadline):
                    response = await self.client.complete(request, sink)
                if response.refused is not None:
                    self._refused(response.refused, request)
                if response.sent is not None:
                    sent = recorded(self.client, request, response.sent)
                return response, sent
            except TimeoutError:
                # The overall deadline passed (the idle timeout is the provider's): an agent
                # failure, not a transport fault, so it is not retried.
                error = ModelCallError("deadline", f"no complete answer within {deadline:g}s")
            except ModelCallError as exc:
                if isinstance(exc, FailedAfterRefusal):
                    self._refused(exc.refused, request)
                error = exc
            except ControlRoomError:
                raise
            except Exception as exc:  # a client library's own failure: never a stuck run
                error = ModelCallError("client_error", f"{type(exc).__name__}: {scrub(str(exc))}")
            will_retry = error.retryable and tries <= self.policy.max_retries
            delay = self.policy.backoff_s * 2 ** (tries - 1) if will_retry else 0.0
            if self.report is not None:
                self.report(
                    AttemptFailure(
                        attempt=self.attempt,
                        provider=self.provider,
                        model=self.model,
                        kind=error.kind,
                        status=error.status,
                        message=str(error),
                        will_retry=will_retry,
                        retry_in_s=delay,
                        request=sent,
                    )
                )
            if not will_retry:
                # Still a ModelCallError (of the last attempt's class, kind and status): the
                # step's flow reads it as the model call's failure, not the performer's.
                raise error.after_retries(
                    f"{self.caller} ({self.provider}/{self.model}) failed after {tries} "
                    f"attempt(s): {error}"
                ) from error
            await asyncio.sleep(delay)

    def _refused(self, refusal: Refusal, request: ModelRequest) -> None:
        """The server refused the request for its structured-output parameter and the
        provider asked again without it: that was an attempt of its own, reported as one;
        what followed is the next attempt."""
        if self.report is not None:
            self.report(
                AttemptFailure(
                    attempt=self.attempt,
                    provider=self.provider,
                    model=self.model,
                    kind=refusal.error.kind,
                    status=refusal.error.status,
                    message=f"{refusal.error} (asked again without structured output)",
                    will_retry=True,
                    retry_in_s=0.0,
                    request=recorded(self.client, request, refusal.body),
                )
            )
        self.attempt += 1


@dataclass
class ModelCall:
    """One agent step's calls: the transport retries, reported as they fail."""

    ctx: Context
    step: AgentStep
    profile: AgentProfile
    client: ModelClient
    policy: ProviderConfig
    report: AttemptObserver | None
    on_text: PartialObserver | None
    attempt: int = 0

    async def reply(self, request: ModelRequest) -> tuple[ModelResponse, RecordedRequest]:
        """A reply, after transport retries with backoff; each failed attempt reported."""
        retrying = Retrying(
            self.client,
            self.policy,
            deadline_s=self.ctx.settings.agent_timeout_s or self.policy.deadline_s,
            caller=f"agent '{self.step.agent_archetype}'",
            provider=self.profile.provider,
            model=self.profile.model,
            report=self.report,
            sink=lambda attempt: sink_for(self.on_text, self.step.step_id, attempt),
            attempt=self.attempt,
            max_reply_chars=reply_limit(self.ctx.settings.max_event_bytes),
        )
        try:
            return await retrying.reply(request)
        finally:
            self.attempt = retrying.attempt


def sink_for(
    on_text: PartialObserver | None, step_id: str, attempt: int
) -> Callable[[str], None] | None:
    if on_text is None:
        return None
    return lambda text: on_text(step_id, attempt, text)
