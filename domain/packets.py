"""Task packets and agent receipts, v0.1 (seed 001, requirements A and B).

A *packet* is what an agent is asked to do, as data: intent, target, scope, the inputs it
is given (each slot with its hash), constraints, the output contract with the artifacts it
may produce, and the handoff. A clarification questionnaire is a packet too
(`intent="clarify"` with choices). A *receipt* is the agent's account of the work: what it
used and produced, its decisions, checks, assumptions, risks, the next action, a STOP_HOOK
flag, citations and a 2-3 sentence excerpt of its report.

Fields the engine knows (the actor and its model and decoding parameters, the times, the
inputs actually injected, the ids) are filled by the engine; the agent's reply supplies
only `ReceiptReply`, and nothing it says there can overwrite the engine's fields.
Both models export JSON Schemas (`domain/schemas/`, checked for staleness by a test).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

SCHEMA_VERSION: Literal["0.1"] = "0.1"
PacketIntent = Literal[
    "plan", "check", "write", "critique", "edit", "review", "update", "clarify"
]  # fmt: skip
MAX_EXCERPT_SENTENCES = 3


class _Strict(BaseModel):
    # Closed; booleans strict (`"false"` is not false). Not strict throughout: a packet read
    # back from JSON carries its timestamp as text.
    model_config = ConfigDict(extra="forbid", frozen=True)


class PacketInput(_Strict):
    """One input the agent is given: a slot, its hash, and what it holds in brief."""

    slot: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    summary: str = ""


class Scope(_Strict):
    description: str = Field(min_length=1)
    #: Workspace paths the task is about (read or written).
    paths: list[str] = Field(default_factory=list)
    #: The item of a loop this packet is for (`write_beat` #2 of 3), if any.
    item_index: int | None = Field(default=None, ge=0)


class OutputContract(_Strict):
    format: Literal["json"] = "json"
    #: The reply contract the receipt must satisfy.
    schema_name: str = Field(min_length=1)
    #: Every workspace path the agent may name as produced; any other is a STOP_HOOK.
    expected_artifacts: list[str] = Field(default_factory=list)


class Handoff(_Strict):
    to: str = Field(min_length=1, description="who acts on the receipt next")
    on_stop: str = Field(default="chief", min_length=1, description="who gets a STOP_HOOK")


class TaskPacket(_Strict):
    version: Literal["0.1"] = SCHEMA_VERSION
    packet_id: str = Field(pattern=r"^pkt_[A-Za-z0-9_]+$")
    parent_issue_id: str | None
    parent_packet_id: str | None
    intent: PacketIntent
    target: str = Field(min_length=1, description="the agent (archetype) the packet is for")
    scope: Scope
    inputs: list[PacketInput]
    constraints: list[str]
    output_contract: OutputContract
    handoff: Handoff
    timestamp: datetime
    requested_by: str = Field(min_length=1)
    #: A clarification questionnaire's options (intent=clarify only, at least two).
    choices: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _clarify_has_choices(self) -> Self:
        if self.intent == "clarify" and len(self.choices) < 2:
            raise ValueError("a clarify packet offers at least two choices")
        if self.intent != "clarify" and self.choices:
            raise ValueError("only a clarify packet carries choices")
        return self


class Actor(_Strict):
    agent: str = Field(min_length=1)
    agent_id: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    tier: str
    decoding: dict[str, Any] = Field(default_factory=dict)


class ReceiptReply(_Strict):
    """What the agent answers to a packet: its work and its account of it, nothing else."""

    output: str = Field(min_length=1, description="the work itself: the plan, prose, report")
    outputs_produced: list[str] = Field(
        description="workspace paths the work is meant for (each must be expected)"
    )
    reasoning_summary: str = Field(min_length=1, description="what was done, no chain of thought")
    decisions: list[str]
    checks_performed: list[str]
    assumptions: list[str]
    risks: list[str]
    next_recommended_action: str = Field(min_length=1)
    STOP_HOOK: StrictBool = Field(
        description="true: the task cannot go on as asked (stop or clarify)"
    )
    citations: list[str]
    report_excerpt: str = Field(min_length=1, description="two or three sentences")

    @field_validator("report_excerpt")
    @classmethod
    def _two_or_three_sentences(cls, value: str) -> str:
        count = sentence_count(value)
        if not 1 <= count <= MAX_EXCERPT_SENTENCES:
            raise ValueError(f"must be 2-3 sentences, not {count}")
        return value


class AgentReceipt(ReceiptReply):
    """The full receipt: the agent's reply plus what only the engine knows."""

    version: Literal["0.1"] = SCHEMA_VERSION
    receipt_id: str = Field(pattern=r"^rcpt_[A-Za-z0-9_]+$")
    packet_id: str = Field(pattern=r"^pkt_[A-Za-z0-9_]+$")
    issue_id: str | None
    actor: Actor
    started_at: datetime
    finished_at: datetime
    inputs_used: list[str]
    #: The work itself when short; a long report is kept once, in the run's slot that
    #: `report_ref` names, and the receipt carries only its excerpt.
    output: str | None = None  # type: ignore[assignment]
    report_ref: dict[str, str] | None = None

    @model_validator(mode="after")
    def _finished_after_started(self) -> Self:
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        return self


def sentence_count(text: str) -> int:
    # A pure function of the text (blingfire, as the tools use); imported here, late, so the
    # domain's other modules never load it.
    from controlroom.tools.text import split_sentences

    return len(split_sentences(" ".join(text.split())))


def undeclared_paths(reply: ReceiptReply, expected: list[str]) -> list[str]:
    """Paths the agent names as produced that the packet did not expect (seed 001 C)."""
    allowed = {p.strip("/") for p in expected}
    return [p for p in reply.outputs_produced if p.strip("/") not in allowed]


SCHEMAS: dict[str, type[BaseModel]] = {
    "task_packet": TaskPacket,
    "agent_receipt": AgentReceipt,
    "receipt_reply": ReceiptReply,
}
