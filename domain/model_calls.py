"""`ModelCalled`: a model answered a call made outside a recipe step.

A recipe step's calls are recorded in its run (`AgentResponded`, `AgentMicroStepResponded`,
a loop's `ForEachItemCompleted`), a conference's in its round (`AgentCallRecorded`: the
roles' and the Chief's tool choices). The Chief's calls for a plan — planning it, reviewing a
task — are recorded with this event in the plan, so that every model call, and what it cost,
is in the log once (the analytics `agent_calls` table reads them all).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.events import CallFacts, ModelReplyEvent
from controlroom.domain.run_events import TokenUsage, usage_call


class ModelCalled(ModelReplyEvent):
    type_name: ClassVar[str] = "ModelCalled"
    #: What the call was for: `plan` or `review`.
    purpose: str
    role: str
    prompt_type: str
    provider: str
    model: str
    tier: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_ms: float = 0.0
    cost_usd: float | None = None
    #: Attempts the engine made for this reply (transport retries included).
    attempts: int = 1
    #: False when the reply broke its contract and the model was asked again.
    accepted: bool = True
    #: The plan task a review was about.
    task_id: int | None = None

    def call(self) -> CallFacts:
        return usage_call(self.role, self)


def model_called_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The event's fields from a call record (the engine's dict of one call)."""
    return {k: v for k, v in record.items() if k in ModelCalled.model_fields}
