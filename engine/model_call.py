"""One agent's model call: transport retries with backoff, each failed attempt reported,
the exact request recorded, and the price of the answer.

Shared by every caller of a model in a run (a step's call, a T1 agent's micro-calls).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controlroom.domain.canonical import sha256_json
from controlroom.domain.errors import ControlRoomError, ModelCallError, ModelError
from controlroom.domain.outcomes import AttemptFailure, AttemptReport, RecordedRequest
from controlroom.domain.run_events import TokenUsage
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.models.agents import AgentProfile
from controlroom.models.config import Price, ProviderConfig
from controlroom.models.port import ModelClient, ModelRequest, ModelResponse, scrub
from controlroom.prompts.contracts import Contract

AttemptObserver = Callable[[AttemptReport], None]
PartialObserver = Callable[[str, int, str], None]  # (step_id, attempt, text)

#: How many times an invalid reply is asked again (seed 001, C: max 2), then STOP_HOOK.
CONTRACT_RETRIES = 2


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
        deadline = self.ctx.settings.agent_timeout_s or self.policy.deadline_s
        tries = 0
        while True:
            self.attempt += 1
            tries += 1
            sent = recorded(self.client, request, body_of(self.client, request))
            sink = sink_for(self.on_text, self.step.step_id, self.attempt)
            try:
                # asyncio.timeout, not wait_for: no extra task, so Ctrl-C reaches the runner.
                async with asyncio.timeout(deadline):
                    response = await self.client.complete(request, sink)
                if response.sent is not None:
                    sent = recorded(self.client, request, response.sent)
                return response, sent
            except TimeoutError:
                # The overall deadline passed (the idle timeout is the provider's): an agent
                # failure, not a transport fault, so it is not retried.
                error = ModelCallError("deadline", f"no complete answer within {deadline:g}s")
            except ModelCallError as exc:
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
                        provider=self.profile.provider,
                        model=self.profile.model,
                        kind=error.kind,
                        status=error.status,
                        message=str(error),
                        will_retry=will_retry,
                        retry_in_s=delay,
                        request=sent,
                    )
                )
            if not will_retry:
                raise ModelError(
                    f"agent '{self.step.agent_archetype}' ({self.profile.provider}/"
                    f"{self.profile.model}) failed after {tries} attempt(s): {error}"
                )
            await asyncio.sleep(delay)


def sink_for(
    on_text: PartialObserver | None, step_id: str, attempt: int
) -> Callable[[str], None] | None:
    if on_text is None:
        return None
    return lambda text: on_text(step_id, attempt, text)
