"""Performing one step: resolve its inputs, call the tool or the model, measure the result.

Nothing here records events; it returns outcomes the Run aggregate turns into events.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import JsonValue

from controlroom.domain.canonical import preview, sha256_json, sha256_text
from controlroom.domain.errors import (
    AgentOutputInvalidError,
    ControlRoomError,
    ModelCallError,
    ModelError,
)
from controlroom.domain.outcomes import (
    AgentOutcome,
    AttemptFailure,
    AttemptReport,
    RecordedRequest,
    ReplyRejection,
    StopHookReport,
    ToolOutcome,
)
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import Run
from controlroom.domain.run_events import TokenUsage
from controlroom.domain.steps import AgentStep, Ref, ToolStep
from controlroom.engine.context import Context
from controlroom.models.agents import AgentProfile
from controlroom.models.config import Price, ProviderConfig
from controlroom.models.port import ModelClient, ModelRequest, ModelResponse, scrub
from controlroom.prompts.contracts import Contract, check_reply
from controlroom.tools.workspace import Workspace


def resolve_args(step: ToolStep, run: Run) -> tuple[dict[str, JsonValue], list[str]]:
    """Literal args pass through; `$ref` args are resolved (appendix C)."""
    task = run.task_context()
    resolved: dict[str, JsonValue] = {}
    refs: list[str] = []
    for name, value in step.args.items():
        if isinstance(value, Ref):
            resolved[name] = resolve_ref(value.ref, task, run.slot_values)
            refs.append(value.ref)
        else:
            resolved[name] = value
    return resolved, refs


def run_tool(ctx: Context, workspace: Workspace, run: Run, step: ToolStep) -> ToolOutcome:
    args, refs = resolve_args(step, run)
    started = time.perf_counter()
    result = ctx.tools.execute(step.tool, dict(args), workspace)
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    output: dict[str, Any] = result.output
    return ToolOutcome(
        receipt_id=ctx.ids.new("rcpt"),
        args=args,
        input_slot_refs=refs,
        output=output,
        output_sha256=sha256_json(output),
        summary=result.summary,
        duration_ms=duration_ms,
    )


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
class _Call:
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
            sink = _sink(self.on_text, self.step.step_id, self.attempt)
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


async def run_agent(
    ctx: Context,
    run: Run,
    step: AgentStep,
    profile: AgentProfile,
    on_attempt_failed: AttemptObserver | None = None,
    on_text: PartialObserver | None = None,
    *,
    extra_inputs: Mapping[str, str] | None = None,
    contract_override: Contract | None = None,
    also_check: Callable[[Any], list[str]] | None = None,
) -> AgentOutcome:
    """Guarantee 5: the prompt is the template plus the step's input slots, nothing else.

    The role is the system prompt, the task and slots the user message. Transport faults
    (429, 5xx, connection errors, timeouts, cut streams) are retried with exponential
    backoff; anything else fails the step at once. A reply that breaks the step's output
    contract is asked again with a stricter prompt naming the errors, at most
    `CONTRACT_RETRIES` times, then STOP_HOOK. Every failed attempt is reported.
    """
    policy = ctx.agents.provider_config(profile.provider)
    shown = {slot: run.slot_texts[slot] for slot in step.input_slots}
    # Kinds built on this one add inputs of their own (a task packet, a loop's item) and may
    # hold the reply to another contract (a receipt) with checks the schema cannot state.
    shown.update(extra_inputs or {})
    rendered = ctx.prompts.render(step.prompt_type, profile.tier, run.task.description, shown)
    if contract_override is not None:
        system = (
            rendered.system.replace(rendered.contract.rendered(), "").strip()
            if rendered.contract is not None
            else rendered.system
        )
        rendered = replace(
            rendered,
            system=f"{system}\n\n{contract_override.rendered()}".strip(),
            contract=contract_override,
        )
    contract = rendered.contract
    request = ModelRequest(
        provider=profile.provider,
        model=profile.model,
        tier=profile.tier,
        agent_archetype=step.agent_archetype,
        prompt_type=step.prompt_type,
        prompt=rendered.user,
        inputs=rendered.inputs,
        task_description=run.task.description,
        params=profile.params,
        system=rendered.system,
        response_schema=contract.schema if contract is not None else None,
        contract_name=contract.name if contract is not None else None,
    )
    client = ctx.agents.client(profile.provider)
    call = _Call(ctx, step, profile, client, policy, on_attempt_failed, on_text)
    started = time.perf_counter()
    replies: list[str] = []
    errors: list[str] = []
    refs: list[str] = []
    while True:
        response, sent = await call.reply(request)
        output, raw = response.text, None
        if contract is None:
            break
        value, errors = check_reply(response.text, contract)
        if not errors and also_check is not None:
            errors = also_check(value)
        if not errors:
            output = json.dumps(value, indent=2, ensure_ascii=False)
            raw = response.text if response.text.strip() != output else None
            break
        replies.append(response.text)
        refs.append(sent.ref)
        will_retry = len(replies) <= CONTRACT_RETRIES
        if on_attempt_failed is not None:
            on_attempt_failed(
                ReplyRejection(
                    attempt=call.attempt,
                    provider=profile.provider,
                    model=profile.model,
                    contract=contract.name,
                    errors=errors,
                    reply=response.text,
                    usage=response.usage,
                    will_retry=will_retry,
                    request=sent,
                )
            )
        if not will_retry:
            if on_attempt_failed is not None:
                on_attempt_failed(
                    StopHookReport(contract.name, len(replies), errors, replies, refs)
                )
            raise AgentOutputInvalidError(step.step_id, contract.name, len(replies), errors)
        request = replace(request, prompt=stricter(rendered.user, contract, errors))
    latency_ms = round((time.perf_counter() - started) * 1000, 3)
    return AgentOutcome(
        agent_id=profile.agent_id,
        tier=profile.tier,
        provider=profile.provider,
        model=profile.model,
        prompt_variant=rendered.variant,
        prompt_hash="sha256:" + sha256_text(rendered.text),
        input_slot_refs=list(step.input_slots),
        output=output,
        output_sha256=sha256_text(output),
        summary=preview(output),
        usage=response.usage,
        latency_ms=latency_ms,
        attempts=call.attempt,
        cost_usd=cost_of(policy.prices.get(profile.model), response.usage),
        request=sent,
        contract=contract.name if contract is not None else None,
        raw_output=raw,
    )


def _sink(
    on_text: PartialObserver | None, step_id: str, attempt: int
) -> Callable[[str], None] | None:
    if on_text is None:
        return None
    return lambda text: on_text(step_id, attempt, text)
