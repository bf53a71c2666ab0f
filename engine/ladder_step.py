"""The work a ladder rung does around its step (`domain/ladder.py` decides which rung).

The flow marks the step instance with the rung (`overrides.ladder`); this wrapper does the
rung's side effects, then hands over to the step kind's own performer:
- **consult**: every consult model is asked at once about the failure (each reply recorded
  as a call), a synthesizer merges their answers, and the step runs with the solution in
  its prompt (`<consult_solution>`);
- **triage**: the triage agent answers RELAX / DEFER / BLOCK under a contract; the engine
  holds it to `min_confidence` and the run's limits (recorded: `TriageDecided`), then runs
  the step with the relaxed constraint, or sets it aside, or blocks it;
- **human**: the step waits for a person; a policy opens a `needs_human` issue with the
  story of the ladder, and `issues answer` continues the run.
Every call a rung makes is committed as it returns (its journal), so a resumed step never
asks again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controlroom.domain.errors import StepDeferredError, TriageBlockedError
from controlroom.domain.ladder import LadderCallRecorded, TriageDecided
from controlroom.domain.outcomes import EventSpec, StepOutcome, Waiting
from controlroom.domain.run import StepInstance
from controlroom.domain.steps import AgentStep
from controlroom.engine.ladder_story import human_issue_id, ladder_story
from controlroom.engine.performers import Execution, Performer
from controlroom.engine.steps import run_agent
from controlroom.models.agents import AgentProfile

#: What one consult or triage input may hold of the step's inputs.
MAX_INPUT_CHARS = 6_000


def with_ladder(inner: Performer) -> Performer:
    async def perform(execution: Execution, instance: StepInstance) -> StepOutcome | Waiting:
        rung = str(instance.overrides.ladder.get("rung", ""))
        if rung == "human":
            return _wait_for_person(execution, instance)
        if rung == "consult":
            solution = await _consult(execution, instance)
            return await inner(execution, _added(instance, "consult_solution", solution))
        if rung == "triage":
            verdict = await _triage(execution, instance)
            if verdict.decision == "RELAX":
                relaxed = f"constraint: {verdict.constraint}\nrelaxed to: {verdict.relaxation}"
                return await inner(execution, _added(instance, "relaxed_constraint", relaxed))
            if verdict.decision == "DEFER":
                raise StepDeferredError(instance.step.step_id, verdict.reason, verdict.note)
            raise TriageBlockedError(
                instance.step.step_id, verdict.overruled or verdict.reason or "BLOCK"
            )
        return await inner(execution, instance)

    return perform


def _added(instance: StepInstance, tag: str, text: str) -> StepInstance:
    overrides = replace(
        instance.overrides,
        prompt_additions=(*instance.overrides.prompt_additions, f"<{tag}>\n{text}\n</{tag}>"),
        ladder={},
    )
    return replace(instance, overrides=overrides)


def _wait_for_person(execution: Execution, instance: StepInstance) -> Waiting:
    owner = str(instance.overrides.ladder.get("owner") or "user")
    return Waiting(
        reason=ladder_story(execution.ctx, execution.run, instance),
        awaiting={
            "kind": "person",
            "owner": owner,
            "issue_id": human_issue_id(execution.run.id, instance.instance_id),
        },
    )


# -- calls --------------------------------------------------------------------------------------


def _profile(execution: Execution, role: str, model: str) -> AgentProfile:
    """A rung's caller, on the model the ladder names (checked: never a silent default)."""
    base = AgentProfile(agent_id=f"{role}-001", archetype=role, tier="t3", provider="", model="")
    return execution.ctx.agents.with_model(base, model)


def _context(execution: Execution, instance: StepInstance) -> dict[str, str]:
    """What a consult or triage agent is shown: the step, its inputs, what was tried."""
    step = instance.step
    run = execution.run
    ladder = instance.overrides.ladder
    inputs = []
    if isinstance(step, AgentStep):
        for slot in step.input_slots:
            text = run.slot_texts.get(slot, "")
            inputs.append(f"### {slot}\n{text[:MAX_INPUT_CHARS]}")
    return {
        "step": (
            f"step '{step.step_id}' ({step.kind}, role "
            f"{getattr(step, 'agent_archetype', '-')}, prompt type "
            f"{getattr(step, 'prompt_type', '-')}), writing slot '{step.output_slot}'; "
            f"constraints: {', '.join(getattr(step, 'constraints', []) or []) or 'none stated'}"
        ),
        "failures": "\n\n".join(f"- {f}" for f in ladder.get("failures", [])) or "(none)",
        "tried": ", ".join(ladder.get("tried", [])) or "(the role's model)",
        "inputs": "\n\n".join(inputs) or "(none)",
    }


async def _ask(
    execution: Execution,
    instance: StepInstance,
    rung: str,
    which: str,
    role: str,
    model: str,
    prompt_type: str,
    shown: Mapping[str, str],
) -> str:
    """One call of the rung, or its recorded reply when the step already made it."""
    for done in execution.run.journal_of(instance.instance_id, LadderCallRecorded):
        if done.which == which:
            return done.output
    step = AgentStep(
        step_id=f"{instance.step.step_id}.{which}",
        agent_archetype=role,
        prompt_type=prompt_type,
        output_slot=f"_{rung}",
    )
    profile = _profile(execution, role, model)
    outcome = await run_agent(
        execution.ctx,
        execution.run,
        step,
        profile,
        execution.record_attempt,
        extra_inputs=shown,
    )
    records: list[EventSpec] = []
    if outcome.request is not None:
        records.append(outcome.request.event())
    records.append(
        (
            LadderCallRecorded,
            {
                "step_id": instance.step.step_id,
                "instance_id": instance.instance_id,
                "rung": rung,
                "which": which,
                "role": role,
                "tier": profile.tier,
                "prompt_type": prompt_type,
                "provider": profile.provider,
                "model": profile.model,
                "output": outcome.output,
                "usage": outcome.usage,
                "latency_ms": outcome.latency_ms,
                "cost_usd": outcome.cost_usd,
                "attempts": outcome.attempts,
                "request_ref": outcome.request.ref if outcome.request else None,
            },
        )
    )
    execution.journal(records)
    return outcome.output


async def _consult(execution: Execution, instance: StepInstance) -> str:
    ladder = instance.overrides.ladder
    shown = _context(execution, instance)
    models = [str(m) for m in ladder.get("consult", [])]
    # Asked at once: the peers do not see each other's answers. A peer whose server fails
    # is left out (its failed attempts are recorded); the rung needs one answer at least.
    answers = await asyncio.gather(
        *(
            _ask(
                execution,
                instance,
                "consult",
                f"consult#{i}",
                "consultant",
                model,
                "ladder_consult",
                shown,
            )
            for i, model in enumerate(models, 1)
        ),
        return_exceptions=True,
    )
    heard = [
        (model, answer)
        for model, answer in zip(models, answers, strict=True)
        if isinstance(answer, str)
    ]
    if not heard:
        failure = next(a for a in answers if isinstance(a, BaseException))
        raise failure
    merged = "\n\n".join(f"### {model}\n{answer.strip()}" for model, answer in heard)
    return await _ask(
        execution,
        instance,
        "consult",
        "synthesis",
        "synthesizer",
        str(ladder["synthesizer"]),
        "ladder_synthesize",
        {**shown, "answers": merged},
    )


async def _triage(execution: Execution, instance: StepInstance) -> TriageDecided:
    recorded = execution.run.journal_of(instance.instance_id, TriageDecided)
    if recorded:
        return recorded[-1]
    ladder = instance.overrides.ladder
    reply = await _ask(
        execution,
        instance,
        "triage",
        "triage",
        "triage",
        str(ladder["model"]),
        "ladder_triage",
        _context(execution, instance),
    )
    verdict = triage_verdict(json.loads(reply), ladder)
    execution.journal(
        [
            (
                TriageDecided,
                {
                    "step_id": instance.step.step_id,
                    "instance_id": instance.instance_id,
                    **verdict,
                },
            )
        ]
    )
    decided = execution.run.journal_of(instance.instance_id, TriageDecided)
    return decided[-1]


def triage_verdict(answer: Mapping[str, Any], ladder: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict acted on: the agent's, held to the confidence floor and the run's
    limits (the contract already checked the answer's shape)."""
    asked = str(answer["decision"])
    confidence = float(answer["confidence"])
    overruled = None
    floor = float(ladder.get("min_confidence", 0.7))
    if asked != "BLOCK" and confidence < floor:
        overruled = f"{asked} at confidence {confidence:.2f}, below the floor {floor:.2f}"
    elif asked == "RELAX" and int(ladder.get("relax_left", 0)) <= 0:
        overruled = "RELAX asked, but the run has relaxed as many constraints as it may"
    elif asked == "DEFER" and int(ladder.get("defer_left", 0)) <= 0:
        overruled = "DEFER asked, but the run has deferred as many tasks as it may"
    elif asked == "RELAX" and not (answer.get("constraint") and answer.get("relaxation")):
        overruled = "RELAX asked without naming the constraint and how it is relaxed"
    return {
        "decision": "BLOCK" if overruled else asked,
        "asked": asked,
        "confidence": confidence,
        "constraint": answer.get("constraint"),
        "relaxation": answer.get("relaxation"),
        "reason": str(answer.get("reason", "")),
        "note": str(answer.get("note", "")),
        "overruled": overruled,
    }
