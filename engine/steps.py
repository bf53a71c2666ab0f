"""Performing one step: resolve its inputs, call the tool or the model, measure the result.

Nothing here records events; it returns outcomes the Run aggregate turns into events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import JsonValue

from controlroom.domain.canonical import preview, sha256_json, sha256_text
from controlroom.domain.errors import AgentOutputInvalidError
from controlroom.domain.outcomes import (
    AgentOutcome,
    ReplyRejection,
    StopHookReport,
    ToolOutcome,
)
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import Run
from controlroom.domain.steps import AgentStep, Ref, ToolStep
from controlroom.engine.context import Context
from controlroom.engine.micro_steps import MicroSteps
from controlroom.engine.model_call import (
    CONTRACT_RETRIES,
    AttemptObserver,
    ModelCall,
    PartialObserver,
    cost_of,
    stricter,
)
from controlroom.models.agents import AgentProfile
from controlroom.models.port import ModelRequest
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


#: What an agent is shown of an input slot its step never got: one whose step triage
#: deferred (only a pipeline's gap analysis runs without its inputs).
NOT_WRITTEN = "(not written: the step that writes this slot was deferred in this run)"


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
    prompt_additions: Sequence[str] = (),
) -> AgentOutcome:
    """Guarantee 5: the prompt is the template plus the step's input slots, nothing else
    (and what the run's flow recorded for this instance: `prompt_additions`, such as a
    reviewer's feedback, close the user message).

    The role is the system prompt, the task and slots the user message. Transport faults
    (429, 5xx, connection errors, timeouts, cut streams) are retried with exponential
    backoff; anything else fails the step at once. A reply that breaks the step's output
    contract is asked again with a stricter prompt naming the errors, at most
    `CONTRACT_RETRIES` times, then STOP_HOOK. Every failed attempt is reported.

    The agent's tier sizes the step (seed 000, "Tier-Based Step Sizing"): a T1 agent makes
    three micro-calls (triage, then the finding under the step's contract, then evidence),
    each recorded; T3 and T5 agents one call, with their own prompt variant.
    """
    shown = {slot: run.slot_texts.get(slot, NOT_WRITTEN) for slot in step.input_slots}
    for slot in step.shown_in_full or ():
        if slot in shown and slot in run.slot_values:
            shown[slot] = full_text(run.slot_values[slot])
    # Kinds built on this one add inputs of their own (a task packet, a loop's item) and may
    # hold the reply to another contract (a receipt) with checks the schema cannot state.
    shown.update(extra_inputs or {})
    observers = (on_attempt_failed, on_text)
    asked = (contract_override, also_check, tuple(prompt_additions))
    if profile.tier != "t1":
        return await _ask(ctx, run, step, profile, shown, *asked, *observers)
    micro = MicroSteps(ctx, run, step, profile, on_attempt_failed)
    triage = await micro.triage(shown)
    focused = {**shown, "triage_focus": triage.output.strip()}
    outcome = await _ask(ctx, run, step, profile, focused, *asked, *observers)
    evidence = await micro.evidence(shown, outcome.output)
    return replace(outcome, micro_steps=(triage, evidence))


#: At most this many characters of a slot shown in full (`shown_in_full`).
FULL_SLOT_CHARS = 60_000


def full_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    if len(text) <= FULL_SLOT_CHARS:
        return text
    return text[:FULL_SLOT_CHARS] + f"\n[… {len(text) - FULL_SLOT_CHARS} more characters]"


async def _ask(
    ctx: Context,
    run: Run,
    step: AgentStep,
    profile: AgentProfile,
    shown: dict[str, str],
    contract_override: Contract | None,
    also_check: Callable[[Any], list[str]] | None,
    prompt_additions: tuple[str, ...],
    on_attempt_failed: AttemptObserver | None,
    on_text: PartialObserver | None,
) -> AgentOutcome:
    policy = ctx.agents.provider_config(profile.provider)
    rendered = ctx.prompts.render(step.prompt_type, profile.tier, run.task.description, shown)
    if prompt_additions:
        added = "\n\n".join(a.strip() for a in prompt_additions if a.strip())
        rendered = replace(rendered, user=f"{rendered.user.rstrip()}\n\n## Also\n\n{added}\n")
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
    call = ModelCall(ctx, step, profile, client, policy, on_attempt_failed, on_text)
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
                    cost_usd=cost_of(policy.prices.get(profile.model), response.usage),
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
