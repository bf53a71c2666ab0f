"""Performers of `packet_agent` and `for_each` (domain/packet_steps.py).

A packet call: the engine builds the task packet from the step and the inputs it really
injects (each slot with its hash), validates it (no call on an invalid packet), shows it to
the agent with the receipt contract, and holds the reply to it: extracted and validated like
any contracted reply, re-asked with a stricter prompt at most twice, then STOP_HOOK. A valid
reply that names a path the packet did not expect, or raises its own STOP_HOOK, stops the
step with STOP_HOOK too (seed 001 C). The receipt is then completed by the engine with what
only the engine knows (ids, actor and model, decoding parameters, times, inputs used).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.errors import AgentOutputInvalidError, RefResolutionError
from controlroom.domain.outcomes import AgentOutcome, EventSpec, StepOutcome, StopHookReport
from controlroom.domain.packet_steps import (
    RECEIPT_CONTRACT,
    ForEachItemCompleted,
    ForEachOutcome,
    ForEachStep,
    PacketAgentStep,
    PacketIssued,
    PacketOutcome,
    ReceiptRecorded,
    item_text,
    joined,
)
from controlroom.domain.packets import (
    Actor,
    AgentReceipt,
    Handoff,
    OutputContract,
    PacketInput,
    ReceiptReply,
    Scope,
    TaskPacket,
    undeclared_paths,
)
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import StepInstance
from controlroom.engine.steps import run_agent
from controlroom.models.agents import AgentProfile
from controlroom.prompts.contracts import Contract, schema_of

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution

#: Outputs longer than this are reports: the receipt points at them instead of repeating them.
REPORT_CHARS = 600
Step = PacketAgentStep | ForEachStep


def receipt_contract() -> Contract:
    return Contract(RECEIPT_CONTRACT, schema_of(ReceiptReply))


def reply_errors(value: Any) -> list[str]:
    """What pydantic finds wrong beyond the schema (an excerpt of 2-3 sentences)."""
    try:
        ReceiptReply.model_validate(value)
    except ValidationError as exc:
        return [
            f"$.{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        ]
    return []


def build_packet(
    execution: Execution,
    step: Step,
    extra: dict[str, str],
    item_index: int | None = None,
) -> TaskPacket:
    run = execution.run
    inputs = [
        PacketInput(slot=slot, sha256=sha256_text(text), summary=preview(text))
        for slot, text in [*((s, run.slot_texts[s]) for s in step.input_slots), *extra.items()]
    ]
    where = f" (item {item_index + 1})" if item_index is not None else ""
    return TaskPacket(
        packet_id=execution.ctx.ids.new("pkt"),
        parent_issue_id=None,
        parent_packet_id=None,
        intent=step.intent,
        target=step.agent_archetype,
        scope=Scope(
            description=f"{run.task.description}: step {step.step_id}{where}",
            paths=list(step.expected_artifacts),
            item_index=item_index,
        ),
        inputs=inputs,
        constraints=list(step.constraints),
        output_contract=OutputContract(
            schema_name=RECEIPT_CONTRACT, expected_artifacts=list(step.expected_artifacts)
        ),
        handoff=Handoff(to=step.handoff_to),
        timestamp=execution.ctx.clock.now(),
        requested_by=f"run {run.id}",
    )


async def call_with_packet(
    execution: Execution,
    instance: StepInstance,
    step: Step,
    extra: dict[str, str],
    item_index: int | None = None,
) -> tuple[AgentOutcome, dict[str, Any], dict[str, Any], str]:
    """One agent call under the packet contract: (the call, the packet, the receipt, the
    work). Raises AgentOutputInvalidError (after recording STOP_HOOK) when the reply is not
    a receipt, names an undeclared path, or raises STOP_HOOK itself."""
    ctx, run = execution.ctx, execution.run
    profile = profile_for(execution, instance, step)
    packet = build_packet(execution, step, extra, item_index)
    packet_json = packet.model_dump(mode="json")
    # The packet is on record before the agent sees it: a call that fails, or a process
    # that dies during it, still leaves the packet in the audit trail.
    ids = {"step_id": step.step_id, "instance_id": instance.instance_id}
    execution.journal([(PacketIssued, {**ids, "packet": packet_json})])
    started = ctx.clock.now()
    outcome = await _call(
        execution,
        instance,
        step,
        {**extra, "task_packet": json.dumps(packet_json, indent=2, ensure_ascii=False)},
        receipt_contract(),
    )
    reply = ReceiptReply.model_validate(json.loads(outcome.output))
    problems = [f"$.outputs_produced: '{p}' is not an expected artifact of this packet"
                for p in undeclared_paths(reply, step.expected_artifacts)]  # fmt: skip
    if reply.STOP_HOOK:
        problems.append(f"the agent raised STOP_HOOK: {reply.next_recommended_action}")
    if problems:
        refs = [outcome.request.ref] if outcome.request is not None else []
        execution.record_attempt(
            StopHookReport(RECEIPT_CONTRACT, outcome.attempts, problems, [outcome.output], refs)
        )
        raise AgentOutputInvalidError(step.step_id, RECEIPT_CONTRACT, outcome.attempts, problems)
    long_report = len(reply.output) > REPORT_CHARS
    receipt = AgentReceipt(
        **{**reply.model_dump(), "output": None if long_report else reply.output},
        receipt_id=ctx.ids.new("rcpt"),
        packet_id=packet.packet_id,
        issue_id=None,
        actor=Actor(
            agent=step.agent_archetype,
            agent_id=profile.agent_id,
            provider=profile.provider,
            model=profile.model,
            tier=profile.tier,
            decoding=dict(profile.params),
        ),
        started_at=started,
        finished_at=max(ctx.clock.now(), started),
        inputs_used=[*step.input_slots, *extra],
        report_ref=(
            {"run_id": run.id, "slot": step.output_slot, "instance_id": instance.instance_id}
            if long_report
            else None
        ),
    )
    return outcome, packet_json, receipt.model_dump(mode="json"), reply.output


def profile_for(execution: Execution, instance: StepInstance, step: Step) -> AgentProfile:
    """The role's profile, served by the model the run's flow named for this instance
    (an escalation, a rollback's override) if it named one."""
    profile = execution.profiles[step.agent_archetype]
    if instance.overrides.model:
        profile = execution.ctx.agents.with_model(profile, instance.overrides.model)
    return profile


async def _call(
    execution: Execution,
    instance: StepInstance,
    step: Step,
    extra: dict[str, str],
    contract: Contract | None,
) -> AgentOutcome:
    """One agent call of the step, with what the flow gave this instance: its model, and
    the prompt additions (a gate's findings, a consult's solution) closing the prompt."""
    run_id, on_partial = execution.run.id, execution.on_partial

    def partial(step_id: str, attempt: int, text: str) -> None:
        on_partial(run_id=run_id, step_id=step_id, attempt=attempt, text=text)

    return await run_agent(
        execution.ctx,
        execution.run,
        step,
        profile_for(execution, instance, step),
        execution.record_attempt,
        partial,
        extra_inputs=extra,
        contract_override=contract,
        also_check=reply_errors if contract is not None else None,
        prompt_additions=instance.overrides.prompt_additions,
    )


async def perform_packet_agent(execution: Execution, instance: StepInstance) -> StepOutcome:
    step = instance.step
    assert isinstance(step, PacketAgentStep)
    outcome, packet, receipt, work = await call_with_packet(execution, instance, step, {})
    fields = _fields(outcome)
    return PacketOutcome(
        **fields,
        packet=packet,
        receipt=receipt,
        work=work,
        instance_id=instance.instance_id,
    )


async def perform_for_each(execution: Execution, instance: StepInstance) -> StepOutcome:
    step = instance.step
    assert isinstance(step, ForEachStep)
    run = execution.run
    items = resolve_ref(step.items.ref, run.task_context(), run.slot_values)
    if not isinstance(items, list) or not items:
        raise RefResolutionError(step.items.ref, step.items.ref, "is not a non-empty list")
    done = run.items_done.get(instance.instance_id, {})
    last: AgentOutcome | None = None
    for index, item in enumerate(items):
        if index in done:
            continue  # finished before a crash: never asked again
        previous = [done[i].output for i in sorted(done) if i < index]
        extra = {
            "item": item_text(item),
            "item_index": f"{index + 1} of {len(items)}",
            "previous_items": joined(previous, step.separator) or "(none yet)",
        }
        if step.item_check is None:
            draft = await draft_item(execution, instance, step, extra, index)
            events = draft.events
        else:
            from controlroom.engine.item_check import checked_item

            draft = await checked_item(execution, instance, step, extra, index, draft_item)
            events = []
        outcome, work = draft.outcome, draft.work
        events.append(
            (
                ForEachItemCompleted,
                {
                    "step_id": step.step_id,
                    "instance_id": instance.instance_id,
                    "index": index,
                    "total": len(items),
                    "output": work,
                    "output_sha256": sha256_text(work),
                    "checked": step.item_check is not None,
                    **draft.facts,
                },
            )
        )
        execution.journal(events)  # committed now: a crash after this never repeats the item
        done = run.items_done.get(instance.instance_id, {})
        last = outcome if outcome is not None else last
    outputs = [done[i].output for i in range(len(items))]
    text = joined(outputs, step.separator)
    model = last or _replayed(done)
    fields = _fields(model)
    fields.update(output=text, output_sha256=sha256_text(text), summary=preview(text))
    fields.update(request=None, raw_output=None, contract=None, micro_steps=())
    return ForEachOutcome(**fields, items=len(items), checked=step.item_check is not None)


@dataclass(frozen=True)
class Draft:
    """One item written: the call (None when read back from the journal), the work, the
    events to record with it, and the call facts the item's records carry."""

    outcome: AgentOutcome | None
    work: str
    events: list[EventSpec]
    facts: dict[str, Any]


async def draft_item(
    execution: Execution,
    instance: StepInstance,
    step: ForEachStep,
    extra: dict[str, str],
    index: int,
) -> Draft:
    """One call of the loop's agent for one item (a packet and its receipt with `packets`)."""
    events: list[EventSpec] = []
    if step.packets:
        outcome, packet, receipt, work = await call_with_packet(
            execution, instance, step, extra, index
        )
        ids = {"step_id": step.step_id, "instance_id": instance.instance_id}
        events += [(ReceiptRecorded, {**ids, "receipt": receipt})]
        packet_id, receipt_id = packet["packet_id"], receipt["receipt_id"]
    else:
        outcome = await _call(execution, instance, step, extra, None)
        work, packet_id, receipt_id = outcome.output, None, None
    if outcome.request is not None:
        events.insert(0, outcome.request.event())
    # A T1 agent's micro-calls around the item's finding, in the order they were made.
    events[:0] = outcome.micro_events(step, instance.instance_id, "triage")
    events += outcome.micro_events(step, instance.instance_id, "evidence")
    facts = {
        "agent_id": outcome.agent_id,
        "provider": outcome.provider,
        "model": outcome.model,
        "input_tokens": outcome.usage.input_tokens,
        "output_tokens": outcome.usage.output_tokens,
        "latency_ms": outcome.latency_ms,
        "attempts": outcome.attempts,
        "request_ref": outcome.request.ref if outcome.request else None,
        "packet_id": packet_id,
        "receipt_id": receipt_id,
    }
    return Draft(outcome, work, events, facts)


def _replayed(done: dict[int, ForEachItemCompleted]) -> AgentOutcome:
    """Every item was done before a crash: the step's call facts from the last item."""
    from controlroom.domain.run_events import TokenUsage

    last = done[max(done)]
    return AgentOutcome(
        agent_id=last.agent_id,
        tier="",
        provider=last.provider,
        model=last.model,
        prompt_variant="",
        prompt_hash="",
        input_slot_refs=[],
        output=last.output,
        output_sha256=last.output_sha256,
        summary=preview(last.output),
        usage=TokenUsage(input_tokens=last.input_tokens, output_tokens=last.output_tokens),
        latency_ms=last.latency_ms,
        attempts=last.attempts,
    )


def _fields(outcome: AgentOutcome) -> dict[str, Any]:
    """The call's facts, as they are (not deep-copied into dicts)."""
    return {name: getattr(outcome, name) for name in AgentOutcome.__dataclass_fields__}
