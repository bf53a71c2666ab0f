"""What a run's events say it spent on models: dollars and tokens, every reply counted once,
rejected replies included (a tree's budget is checked against it before each model call:
`engine/tree_budget.py`). Read from recorded events only, so it survives crashes and
resumes exactly."""

from __future__ import annotations

from dataclasses import dataclass

from controlroom.domain.events import DomainEvent, ModelReplyEvent
from controlroom.domain.packet_steps import ForEachItemCompleted
from controlroom.domain.run_events import AgentReplyRejected, AgentResponded


@dataclass(frozen=True)
class Spend:
    cost_usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(round(self.cost_usd + other.cost_usd, 9), self.tokens + other.tokens)


NOTHING = Spend()


def spend_of(event: DomainEvent) -> Spend:
    """The spend one event records (nothing for events that record no model reply).

    A checked loop's closing `AgentResponded` repeats its items' calls, and a loop's last
    item is the step's own reply: neither is counted twice (as analytics counts them)."""
    if isinstance(event, AgentReplyRejected):
        usage = event.usage
        return Spend(event.cost_usd or 0.0, usage.input_tokens + usage.output_tokens)
    if not isinstance(event, ModelReplyEvent):
        return NOTHING
    if isinstance(event, AgentResponded) and event.repeats_items:
        return NOTHING
    if isinstance(event, ForEachItemCompleted) and (
        event.checked or event.index >= event.total - 1
    ):
        return NOTHING
    facts = event.call()
    return Spend(facts.cost_usd or 0.0, facts.input_tokens + facts.output_tokens)
