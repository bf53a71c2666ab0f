"""A loop's item checked as it is written (`ForEachStep.item_check`): the checker reads the
item, its verdict is read as a review gate reads one, and a FAIL sends the item back to the
loop's agent with the findings (`<review_feedback>`), at most `max_revisions` times; then
the step fails as a gate does (its ladder decides). Every draft and every check is
committed as it returns (`ForEachItemDrafted`, `ForEachItemChecked`), so a resumed loop
asks for neither again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from controlroom.domain.errors import ItemCheckFailedError
from controlroom.domain.gates import read_verdict
from controlroom.domain.packet_steps import ForEachItemChecked, ForEachItemDrafted, ForEachStep
from controlroom.domain.run import StepInstance
from controlroom.domain.steps import AgentStep
from controlroom.engine.packet_agent import Draft
from controlroom.engine.steps import run_agent

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution

DraftItem = Callable[
    ["Execution", StepInstance, ForEachStep, dict[str, str], int], Awaitable[Draft]
]

#: The findings a revision is told at most.
MAX_FINDINGS = 10


def _feedback(step_id: str, index: int, attempt: int, findings: list[str]) -> str:
    listed = "\n".join(f"{i}) {f}" for i, f in enumerate(findings[:MAX_FINDINGS], 1))
    return (
        f'<review_feedback step="{step_id}" item="{index + 1}" draft="{attempt}">\n'
        f"The check rejected this item's draft:\n{listed or '(no findings given)'}\n"
        "Write the item again, mending each finding and changing nothing else.\n"
        "</review_feedback>"
    )


async def checked_item(
    execution: Execution,
    instance: StepInstance,
    step: ForEachStep,
    extra: dict[str, str],
    index: int,
    draft_item: DraftItem,
) -> Draft:
    check = step.item_check
    assert check is not None
    run = execution.run
    ids = {"step_id": step.step_id, "instance_id": instance.instance_id}
    drafted = {
        r.attempt: r for r in run.journal_of(instance.instance_id, ForEachItemDrafted)
        if r.index == index
    }  # fmt: skip
    checked = {
        r.attempt: r for r in run.journal_of(instance.instance_id, ForEachItemChecked)
        if r.index == index
    }  # fmt: skip
    findings: list[str] = []
    attempt = 1
    while True:
        if attempt in drafted:
            record = drafted[attempt]
            facts = _facts(record)
            draft = Draft(None, record.output, [], facts)
        else:
            asked = instance
            if findings:
                additions = (*instance.overrides.prompt_additions,
                             _feedback(step.step_id, index, attempt - 1, findings))  # fmt: skip
                asked = replace(
                    instance, overrides=replace(instance.overrides, prompt_additions=additions)
                )
            draft = await draft_item(execution, asked, step, extra, index)
            fields = {**ids, "index": index, "attempt": attempt, "output": draft.work}
            if draft.outcome is not None:
                fields["cost_usd"] = draft.outcome.cost_usd
            execution.journal([*draft.events, (ForEachItemDrafted, {**fields, **draft.facts})])
        if attempt in checked:
            verdict_passed, findings = checked[attempt].passed, list(checked[attempt].findings)
        else:
            verdict_passed, findings = await _check(execution, instance, step, index, attempt,
                                                    draft.work)  # fmt: skip
        if verdict_passed:
            return Draft(draft.outcome, draft.work, [], draft.facts)
        if attempt > check.max_revisions:
            raise ItemCheckFailedError(step.step_id, index, findings)
        attempt += 1


def _facts(record: ForEachItemDrafted) -> dict[str, object]:
    keys = ("agent_id", "provider", "model", "input_tokens", "output_tokens", "latency_ms",
            "attempts", "request_ref", "packet_id", "receipt_id")  # fmt: skip
    return {k: getattr(record, k) for k in keys}


async def _check(
    execution: Execution,
    instance: StepInstance,
    step: ForEachStep,
    index: int,
    attempt: int,
    work: str,
) -> tuple[bool, list[str]]:
    check = step.item_check
    assert check is not None
    checker = AgentStep(
        step_id=f"{step.step_id}.check",
        agent_archetype=check.agent_archetype,
        prompt_type=check.prompt_type,
        input_slots=check.input_slots,
        output_slot=f"_{step.output_slot}_check",
    )
    profile = execution.profiles[check.agent_archetype]
    outcome = await run_agent(
        execution.ctx,
        execution.run,
        checker,
        profile,
        execution.record_attempt,
        extra_inputs={"item": work},
    )
    verdict = read_verdict(None, outcome.output)
    findings = list(verdict.findings)
    record = {
        "step_id": step.step_id,
        "instance_id": instance.instance_id,
        "index": index,
        "attempt": attempt,
        "passed": verdict.passed,
        "findings": findings,
        "agent_id": outcome.agent_id,
        "provider": outcome.provider,
        "model": outcome.model,
        "input_tokens": outcome.usage.input_tokens,
        "output_tokens": outcome.usage.output_tokens,
        "latency_ms": outcome.latency_ms,
        "attempts": outcome.attempts,
        "cost_usd": outcome.cost_usd,
        "request_ref": outcome.request.ref if outcome.request else None,
    }
    requests = [outcome.request.event()] if outcome.request is not None else []
    # A T1 checker's micro-calls around its verdict, in the order they were made.
    execution.journal(
        [
            *outcome.micro_events(checker, instance.instance_id, "triage"),
            *requests,
            (ForEachItemChecked, record),
            *outcome.micro_events(checker, instance.instance_id, "evidence"),
        ]
    )
    return verdict.passed, findings
