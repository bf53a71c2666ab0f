"""Performing one step: resolve its inputs, call the tool or the model, measure the result.

Nothing here records events; it returns outcomes the Run aggregate turns into events.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from pydantic import JsonValue

from controlroom.domain.canonical import preview, sha256_json, sha256_text
from controlroom.domain.errors import ModelCallError, ModelError
from controlroom.domain.outcomes import AgentOutcome, AttemptFailure, ToolOutcome
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import Run
from controlroom.domain.run_events import TokenUsage
from controlroom.domain.steps import AgentStep, Ref, ToolStep
from controlroom.engine.context import Context
from controlroom.models.agents import AgentProfile
from controlroom.models.config import Price
from controlroom.models.port import ModelRequest
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


AttemptObserver = Callable[[AttemptFailure], None]
PartialObserver = Callable[[str, int, str], None]  # (step_id, attempt, text)


def cost_of(price: Price | None, usage: TokenUsage) -> float | None:
    if price is None:
        return None
    return round(
        (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok)
        / 1_000_000,
        6,
    )


async def run_agent(
    ctx: Context,
    run: Run,
    step: AgentStep,
    profile: AgentProfile,
    on_attempt_failed: AttemptObserver | None = None,
    on_text: PartialObserver | None = None,
) -> AgentOutcome:
    """Guarantee 5: the prompt is the template plus the step's input slots, nothing else.

    Retries (429, 5xx, connection errors, timeouts) are bounded with exponential backoff
    and each failed attempt is reported; anything else fails the step at once.
    """
    policy = ctx.agents.provider_config(profile.provider)
    shown = {slot: run.slot_texts[slot] for slot in step.input_slots}
    rendered = ctx.prompts.render(step.prompt_type, profile.tier, run.task.description, shown)
    request = ModelRequest(
        provider=profile.provider,
        model=profile.model,
        tier=profile.tier,
        agent_archetype=step.agent_archetype,
        prompt_type=step.prompt_type,
        prompt=rendered.text,
        inputs=rendered.inputs,
        task_description=run.task.description,
        params=profile.params,
    )
    client = ctx.agents.client(profile.provider)
    timeout = ctx.settings.agent_timeout_s or policy.timeout_s
    started = time.perf_counter()
    attempt = 0
    while True:
        attempt += 1
        sink = _sink(on_text, step.step_id, attempt)
        try:
            # asyncio.timeout, not wait_for: no extra task, so Ctrl-C reaches the runner.
            async with asyncio.timeout(timeout):
                response = await client.complete(request, sink)
            break
        except TimeoutError:
            error = ModelCallError("timeout", f"no answer within {timeout:g}s")
        except ModelCallError as exc:
            error = exc
        will_retry = error.retryable and attempt <= policy.max_retries
        delay = policy.backoff_s * 2 ** (attempt - 1) if will_retry else 0.0
        if on_attempt_failed is not None:
            on_attempt_failed(
                AttemptFailure(
                    attempt=attempt,
                    provider=profile.provider,
                    model=profile.model,
                    kind=error.kind,
                    status=error.status,
                    message=str(error),
                    will_retry=will_retry,
                    retry_in_s=delay,
                )
            )
        if not will_retry:
            raise ModelError(
                f"agent '{step.agent_archetype}' ({profile.provider}/{profile.model}) failed "
                f"after {attempt} attempt(s): {error}"
            )
        await asyncio.sleep(delay)
    latency_ms = round((time.perf_counter() - started) * 1000, 3)
    return AgentOutcome(
        agent_id=profile.agent_id,
        tier=profile.tier,
        provider=profile.provider,
        model=profile.model,
        prompt_variant=rendered.variant,
        prompt_hash="sha256:" + sha256_text(rendered.text),
        input_slot_refs=list(step.input_slots),
        output=response.text,
        output_sha256=sha256_text(response.text),
        summary=preview(response.text),
        usage=response.usage,
        latency_ms=latency_ms,
        attempts=attempt,
        cost_usd=cost_of(policy.prices.get(profile.model), response.usage),
    )


def _sink(
    on_text: PartialObserver | None, step_id: str, attempt: int
) -> Callable[[str], None] | None:
    if on_text is None:
        return None
    return lambda text: on_text(step_id, attempt, text)
