"""Two step kinds built on agent steps (seed 001): `packet_agent`, an agent that gets a task
packet and must answer with a receipt and nothing else; and `for_each`, an agent (or packet
agent) run once per item of a list in a slot (the writer loop: one `write_beat` per beat).

Their events: `PacketIssued` and `ReceiptRecorded` for each packet and receipt, and
`ForEachItemCompleted` for each item of a loop, committed as soon as it is done, so a
resumed loop never runs an item twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import CallFacts, JournalRecord, ModelReplyEvent, RecordedLoopCall
from controlroom.domain.outcomes import AgentOutcome, EventSpec
from controlroom.domain.packets import PacketIntent
from controlroom.domain.run_events import AgentResponded, SlotWritten
from controlroom.domain.steps import STEP_KINDS, AgentStep, KnownNames, Ref, StepSpec

RECEIPT_CONTRACT = "receipt_reply"


class PacketAgentStep(AgentStep):
    """An agent step under the task-packet contract."""

    kind: Literal["packet_agent"] = "packet_agent"  # type: ignore[assignment]
    intent: PacketIntent
    #: Workspace paths the agent may name as produced; any other is a STOP_HOOK.
    expected_artifacts: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    #: Who acts on the receipt next (the next step's agent, or the chief).
    handoff_to: str = "chief"


class ItemCheck(BaseModel):
    """A check of each item a loop writes (the playbook's per-beat continuity check): an
    agent reads the item (and `input_slots`) and answers a verdict; a FAIL sends the item
    back to the loop's agent with the findings, at most `max_revisions` times."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_archetype: str = Field(min_length=1)
    prompt_type: str = Field(min_length=1)
    input_slots: list[str] = Field(default_factory=list)
    max_revisions: int = Field(default=2, ge=0, le=5)


class ForEachStep(AgentStep):
    """An agent run once per item of a list (a `$ref` into a slot or the task), in order.
    Each item is shown as `item` (with `item_index`, and the outputs so far as
    `previous_items`); the outputs, joined, are the step's slot. With `packets`, every
    item's call is a packet and a receipt, as in `packet_agent`."""

    kind: Literal["for_each"] = "for_each"  # type: ignore[assignment]
    items: Ref
    packets: bool = False
    intent: PacketIntent = "write"
    expected_artifacts: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    handoff_to: str = "chief"
    #: How the outputs are joined into the slot's text.
    separator: str = "\n\n"
    #: Each item checked as it is written, and revised when the check fails.
    item_check: ItemCheck | None = None

    def slots_read(self) -> list[str]:
        extra = self.item_check.input_slots if self.item_check else []
        return [*self.input_slots, *(s for s in extra if s not in self.input_slots)]

    def refs(self) -> Iterator[tuple[str, str]]:
        yield "items.$ref", self.items.ref

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        yield from super().problems(known)
        if self.item_check and self.item_check.prompt_type not in known.prompts:
            yield (
                "item_check.prompt_type",
                f"unknown prompt type '{self.item_check.prompt_type}'",
            )


STEP_KINDS.register(PacketAgentStep)
STEP_KINDS.register(ForEachStep)


class PacketIssued(JournalRecord):
    type_name: ClassVar[str] = "PacketIssued"
    attempt: int = 1
    packet: dict[str, Any]


class ReceiptRecorded(JournalRecord):
    type_name: ClassVar[str] = "ReceiptRecorded"
    attempt: int = 1
    receipt: dict[str, Any]
    #: The long report, when it is not kept elsewhere (stored once: the receipt's excerpt
    #: and `report_ref` point at it).
    report: str | None = None


class _CheckedLoopCall(RecordedLoopCall):
    """A call of a checked loop (a draft of an item, or the check of a draft)."""

    abstract_event: ClassVar[bool] = True
    index: int
    attempt: int


class ForEachItemDrafted(_CheckedLoopCall):
    """One draft of a checked loop's item (attempt 1, then each revision), committed as it
    is written: a resumed loop never asks for it again."""

    type_name: ClassVar[str] = "ForEachItemDrafted"
    output: str
    packet_id: str | None = None
    receipt_id: str | None = None


class ForEachItemChecked(_CheckedLoopCall):
    """The check of one draft of an item: its verdict and findings, and the call."""

    type_name: ClassVar[str] = "ForEachItemChecked"
    passed: bool
    findings: list[str] = Field(default_factory=list)


class ForEachItemCompleted(JournalRecord, ModelReplyEvent):
    type_name: ClassVar[str] = "ForEachItemCompleted"
    index: int
    total: int
    output: str
    output_sha256: str
    agent_id: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    request_ref: str | None = None
    packet_id: str | None = None
    receipt_id: str | None = None
    #: In a checked loop: the item's accepted draft, already recorded as its call
    #: (`ForEachItemDrafted`), so this record is not a call to count again.
    checked: bool = False

    def call(self) -> CallFacts:
        return CallFacts(
            self.agent_id.rsplit("-", 1)[0],
            self.provider,
            self.model,
            "",
            self.input_tokens,
            self.output_tokens,
            self.latency_ms,
            None,
            self.attempts,
        )


@dataclass(frozen=True)
class PacketOutcome(AgentOutcome):
    """An agent's answer to a packet: the call as any agent's, plus the packet and the
    receipt. The slot holds the receipt's `output` (the work), not the reply JSON."""

    packet: dict[str, Any] = field(default_factory=dict)
    receipt: dict[str, Any] = field(default_factory=dict)
    work: str = ""
    instance_id: str = ""

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        agent_events = super().events(step, session_id)
        *call, (slot_event, slot) = agent_events
        assert slot_event is SlotWritten
        slot = {**slot, "text": self.work, "sha256": sha256_text(self.work)}
        # The packet itself was recorded before the call (PacketIssued, by the performer).
        return [
            *call,
            (ReceiptRecorded, {**self._ids(step), "receipt": self.receipt}),
            (SlotWritten, slot),
        ]

    def _ids(self, step: StepSpec) -> dict[str, Any]:
        return {"step_id": step.step_id, "instance_id": self.instance_id or step.step_id}

    def preview_source(self) -> str:
        return self.work


@dataclass(frozen=True)
class ForEachOutcome(AgentOutcome):
    """Every item done: the outputs joined are the slot (the items' own events were
    recorded as each finished)."""

    items: int = 0
    #: Its items were checked: every draft and check is a call recorded of its own.
    checked: bool = False

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        events = super().events(step, session_id)
        if not self.checked:
            return events
        return [
            (kind, {**fields, "repeats_items": True}) if kind is AgentResponded else (kind, fields)
            for kind, fields in events
        ]


def joined(outputs: list[str], separator: str) -> str:
    return separator.join(o.strip() for o in outputs)


def item_text(item: Any) -> str:
    return item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, indent=2)
