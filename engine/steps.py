"""Performing one step: resolve its inputs, call the tool or the model, measure the result.

Nothing here records events; it returns outcomes the Run aggregate turns into events.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from pydantic import JsonValue

from domain.canonical import preview, sha256_json, sha256_text
from domain.errors import ModelError
from domain.recipe import AgentStep, Ref, ToolStep
from domain.refs import resolve_ref
from domain.run import AgentOutcome, Run, ToolOutcome
from engine.context import Context
from models.port import ModelRequest
from tools.workspace import Workspace

AGENT_TIMEOUT_VAR = "CONTROLROOM_AGENT_TIMEOUT_S"
DEFAULT_AGENT_TIMEOUT_S = 300.0


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


def agent_timeout() -> float:
    raw = os.environ.get(AGENT_TIMEOUT_VAR, "").strip()
    try:
        return float(raw) if raw else DEFAULT_AGENT_TIMEOUT_S
    except ValueError:
        return DEFAULT_AGENT_TIMEOUT_S


async def run_agent(ctx: Context, run: Run, step: AgentStep) -> AgentOutcome:
    """Guarantee 5: the prompt is the template plus the step's input slots, nothing else."""
    profile = ctx.agents.profile(step.agent_archetype)
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
    )
    client = ctx.agents.client(profile.provider)
    started = time.perf_counter()
    timeout = agent_timeout()
    try:
        # asyncio.timeout, not wait_for: no extra task, so Ctrl-C reaches the runner directly.
        async with asyncio.timeout(timeout):
            response = await client.complete(request)
    except TimeoutError:
        raise ModelError(f"agent '{step.agent_archetype}' timed out after {timeout:g}s") from None
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
    )
