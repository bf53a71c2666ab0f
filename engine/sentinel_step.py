"""The `verify_loop` step's performer (`domain/sentinel.py` decides; this does the calls).

Each verification and each fix is committed as it returns (`SentinelVerified`,
`SentinelFixed`), so a resumed loop asks for neither again and goes on from the cycle it
reached. The verifier is shown the work under its template's name; the fixer is shown the
work and the fix list (`fix_list`: the blocking findings, and the verifier's report).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.errors import NeedsRefinementError
from controlroom.domain.gates import read_verdict
from controlroom.domain.outcomes import AgentOutcome, ArtifactOutcome, EventSpec
from controlroom.domain.run import StepInstance
from controlroom.domain.sentinel import (
    LoopRole,
    SentinelFixed,
    SentinelVerified,
    VerifyLoopStep,
    after_verification,
    fix_list_sha256,
)
from controlroom.domain.steps import AgentStep
from controlroom.engine.steps import run_agent

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


async def perform_verify_loop(execution: Execution, instance: StepInstance) -> ArtifactOutcome:
    step = instance.step
    assert isinstance(step, VerifyLoopStep)
    run = execution.run
    done_verifying = {r.cycle: r for r in run.journal_of(instance.instance_id, SentinelVerified)}
    done_fixing = {r.cycle: r for r in run.journal_of(instance.instance_id, SentinelFixed)}
    text = run.slot_texts.get(step.target_slot, "")
    verified: list[SentinelVerified] = []
    for cycle in range(1, step.max_cycles + 1):
        record = done_verifying.get(cycle) or await _verify(execution, instance, cycle, text)
        verified.append(record)
        verdict = after_verification(cycle, step.max_cycles, verified)
        if verdict.action == "done":
            summary = f"verified after {cycle} cycle(s): {preview(text)}"
            refs = [step.target_slot]
            return ArtifactOutcome(text, sha256_text(text), refs, "sentinel", summary)
        if verdict.action == "stop":
            raise NeedsRefinementError(step.step_id, verdict.reason, list(record.blocking))
        fixed = done_fixing.get(cycle) or await _fix(execution, instance, cycle, text, record)
        text = fixed.output
    raise AssertionError("unreachable: the last cycle stops or is done")


def _agent(step: VerifyLoopStep, role: LoopRole, what: str) -> AgentStep:
    return AgentStep(
        step_id=f"{step.step_id}.{what}",
        agent_archetype=role.agent_archetype,
        prompt_type=role.prompt_type,
        input_slots=role.input_slots,
        output_slot=f"_{step.output_slot}_{what}",
    )


async def _call(
    execution: Execution,
    step: VerifyLoopStep,
    role: LoopRole,
    what: str,
    shown: dict[str, str],
) -> AgentOutcome:
    return await run_agent(
        execution.ctx,
        execution.run,
        _agent(step, role, what),
        execution.profiles[role.agent_archetype],
        execution.record_attempt,
        extra_inputs=shown,
    )


def _facts(outcome: AgentOutcome, role: LoopRole) -> dict[str, Any]:
    return {
        "agent_archetype": role.agent_archetype,
        "agent_id": outcome.agent_id,
        "provider": outcome.provider,
        "model": outcome.model,
        "tier": outcome.tier,
        "input_tokens": outcome.usage.input_tokens,
        "output_tokens": outcome.usage.output_tokens,
        "latency_ms": outcome.latency_ms,
        "attempts": outcome.attempts,
        "cost_usd": outcome.cost_usd,
        "request_ref": outcome.request.ref if outcome.request is not None else None,
    }


def _commit(execution: Execution, outcome: AgentOutcome, record: EventSpec) -> None:
    recorded = [outcome.request.event()] if outcome.request is not None else []
    execution.journal([*recorded, record])


async def _verify(
    execution: Execution, instance: StepInstance, cycle: int, text: str
) -> SentinelVerified:
    step = instance.step
    assert isinstance(step, VerifyLoopStep)
    role = step.verifier
    outcome = await _call(
        execution, step, role, "verify", {role.shown_as or step.target_slot: text}
    )
    verdict = read_verdict(None, outcome.output)
    blocking = [] if verdict.passed else list(verdict.findings)
    fields = {
        "step_id": step.step_id,
        "instance_id": instance.instance_id,
        "cycle": cycle,
        "text_sha256": sha256_text(text),
        "passed": verdict.passed,
        "blocking": blocking,
        "fix_list_sha256": fix_list_sha256(blocking),
        "output": outcome.output,
        **_facts(outcome, role),
    }
    _commit(execution, outcome, (SentinelVerified, fields))
    return SentinelVerified.model_construct(**fields)


async def _fix(
    execution: Execution,
    instance: StepInstance,
    cycle: int,
    text: str,
    verified: SentinelVerified,
) -> SentinelFixed:
    step = instance.step
    assert isinstance(step, VerifyLoopStep)
    role = step.fixer
    fix_list = {"blocking": list(verified.blocking), "report": _json_or_text(verified.output)}
    shown = {
        role.shown_as or step.target_slot: text,
        "fix_list": json.dumps(fix_list, indent=2, ensure_ascii=False),
    }
    outcome = await _call(execution, step, role, "fix", shown)
    fields = {
        "step_id": step.step_id,
        "instance_id": instance.instance_id,
        "cycle": cycle,
        "output": outcome.output,
        "output_sha256": sha256_text(outcome.output),
        **_facts(outcome, role),
    }
    _commit(execution, outcome, (SentinelFixed, fields))
    return SentinelFixed.model_construct(**fields)


def _json_or_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
