"""What performing a step produced, computed by the engine before any event is made.

A performer returns one of these; the Run aggregate turns it into events: the kind's own
events (`events()`), then the generic completion. A new step kind brings its own outcome.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from controlroom.domain import untrusted_json
from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.events import DomainEvent
from controlroom.domain.kept_text import bounded_errors, digest_of, kept_reply
from controlroom.domain.run_events import (
    AgentMicroStepResponded,
    AgentResponded,
    FileWritten,
    ModelRequestRecorded,
    ReceiptIssued,
    ReplyDigest,
    SlotWritten,
    TokenUsage,
)
from controlroom.domain.steps import AgentStep, StepSpec, ToolStep, WriteFileStep

EventSpec = tuple[type[DomainEvent], dict[str, Any]]


class StepOutcome(ABC):
    """A finished step's result: its events, the hash and preview of what it wrote."""

    output_sha256: str
    input_slot_refs: list[str]

    @abstractmethod
    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        """The kind's own events in order, ending with the `SlotWritten` of its output."""

    @abstractmethod
    def preview_source(self) -> str:
        """The text the step's one-line preview is made from."""


@dataclass(frozen=True)
class ArtifactOutcome(StepOutcome):
    """A step kind's text written to its slot as an artifact, by `agent_id` (a verify
    loop's verified text, an eval's report); `summary` defaults to the text's preview."""

    text: str
    output_sha256: str
    input_slot_refs: list[str]
    agent_id: str
    summary: str = ""

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        slot = {"slot": step.output_slot, "kind": "artifact", "agent_id": self.agent_id,
                "text": self.text, "sha256": self.output_sha256,
                "summary": self.summary or preview(self.text)}  # fmt: skip
        return [(SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.text


@dataclass(frozen=True)
class ToolOutcome(StepOutcome):
    receipt_id: str
    args: dict[str, JsonValue]
    input_slot_refs: list[str]
    output: JsonValue
    output_sha256: str
    summary: str
    duration_ms: float

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        assert isinstance(step, ToolStep)
        receipt = {
            "receipt_id": self.receipt_id,
            "session_id": session_id,
            "step_id": step.step_id,
            "tool": step.tool,
            "args": self.args,
            "input_slot_refs": self.input_slot_refs,
            "output": self.output,
            "output_sha256": self.output_sha256,
            "summary": self.summary,
            "duration_ms": self.duration_ms,
        }
        slot = {
            "slot": step.output_slot,
            "kind": "pointer",
            "receipt_id": self.receipt_id,
            "sha256": self.output_sha256,
            "summary": self.summary,
        }
        return [(ReceiptIssued, receipt), (SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.summary


@dataclass(frozen=True)
class RecordedRequest:
    """The exact body a provider sent, under its content hash (`sha256:...`)."""

    ref: str
    provider: str
    model: str
    body: dict[str, Any]

    def event(self) -> EventSpec:
        return (
            ModelRequestRecorded,
            {"ref": self.ref, "provider": self.provider, "model": self.model, "body": self.body},
        )


@dataclass(frozen=True)
class MicroStep:
    """One micro-call of a T1 agent around its finding: `triage` or `evidence`."""

    name: str
    prompt_type: str
    prompt_variant: str
    prompt_hash: str
    output: str
    usage: TokenUsage
    latency_ms: float
    attempts: int
    cost_usd: float | None
    request: RecordedRequest | None
    decision: str | None = None
    verified: bool | None = None
    problem: str | None = None

    def events(
        self, step: AgentStep, instance_id: str, agent: AgentOutcome | AgentFacts
    ) -> list[EventSpec]:
        recorded = [self.request.event()] if self.request is not None else []
        fields = {
            "step_id": step.step_id,
            "instance_id": instance_id,
            "micro_step": self.name,
            "agent_archetype": step.agent_archetype,
            "agent_id": agent.agent_id,
            "tier": agent.tier,
            "provider": agent.provider,
            "model": agent.model,
            "prompt_type": self.prompt_type,
            "prompt_variant": self.prompt_variant,
            "prompt_hash": self.prompt_hash,
            "output": self.output,
            "output_sha256": sha256_text(self.output),
            "usage": self.usage,
            "latency_ms": self.latency_ms,
            "attempts": self.attempts,
            "cost_usd": self.cost_usd,
            "request_ref": self.request.ref if self.request is not None else None,
            "decision": self.decision,
            "verified": self.verified,
            "problem": self.problem,
        }
        return [*recorded, (AgentMicroStepResponded, fields)]


@dataclass(frozen=True)
class AgentOutcome(StepOutcome):
    """What an agent answered, with everything needed to audit the call."""

    agent_id: str
    tier: str
    provider: str
    model: str
    prompt_variant: str
    prompt_hash: str
    input_slot_refs: list[str]
    output: str
    output_sha256: str
    summary: str
    usage: TokenUsage
    latency_ms: float
    attempts: int = 1
    cost_usd: float | None = None
    request: RecordedRequest | None = None
    contract: str | None = None
    raw_output: str | None = None
    #: A T1 agent's triage and evidence calls (tier-sized steps); empty for T3 and T5.
    micro_steps: tuple[MicroStep, ...] = ()

    def micro_events(self, step: AgentStep, instance_id: str, name: str) -> list[EventSpec]:
        return [
            event
            for micro in self.micro_steps
            if micro.name == name
            for event in micro.events(step, instance_id, self)
        ]

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        assert isinstance(step, AgentStep)
        # The run drops a request it has recorded already: each is recorded once.
        recorded = [self.request.event()] if self.request is not None else []
        raw_output, raw_digest = self.kept_raw_output()
        responded = {
            "step_id": step.step_id,
            "agent_archetype": step.agent_archetype,
            "agent_id": self.agent_id,
            "tier": self.tier,
            "provider": self.provider,
            "model": self.model,
            "prompt_type": step.prompt_type,
            "prompt_variant": self.prompt_variant,
            "prompt_hash": self.prompt_hash,
            "input_slot_refs": self.input_slot_refs,
            "output": self.output,
            "output_sha256": self.output_sha256,
            "usage": self.usage,
            "latency_ms": self.latency_ms,
            "attempts": self.attempts,
            "cost_usd": self.cost_usd,
            "request_ref": self.request.ref if self.request is not None else None,
            "contract": self.contract,
            "raw_output": raw_output,
            "raw_output_digest": raw_digest,
        }
        if self.micro_steps:
            responded["micro_step"] = "finding"
        slot = {
            "slot": step.output_slot,
            "kind": "artifact",
            "agent_id": self.agent_id,
            "text": self.output,
            "sha256": self.output_sha256,
            "summary": self.summary,
        }
        # The instance id is the run's to know; a micro step's event reads it as the step id.
        return [
            *self.micro_events(step, "", "triage"),
            *recorded,
            (AgentResponded, responded),
            *self.micro_events(step, "", "evidence"),
            (SlotWritten, slot),
        ]

    def preview_source(self) -> str:
        return self.output

    def kept_raw_output(self) -> tuple[str | None, ReplyDigest | None]:
        """The reply as the event keeps it beside `output`: stored once, never twice. A
        reply that was only the JSON of `output` (formatted another way) is named by its
        digest; one with more around it (a fence, prose) is kept, a long one by its head
        and tail."""
        raw = self.raw_output
        if raw is None:
            return None, None
        if self.contract is not None and _is_only_json_of(raw, self.output):
            return None, digest_of(raw)
        return kept_reply(raw)


def _is_only_json_of(raw: str, output: str) -> bool:
    """Whether `raw` is one JSON document whose value `output` holds (indented as the engine
    stores a contract's JSON)."""
    try:
        value = untrusted_json.loads(raw)
    except ValueError:
        return False
    return json.dumps(value, indent=2, ensure_ascii=False) == output


@dataclass(frozen=True)
class FileWriteOutcome(StepOutcome):
    """A `write_file` step wrote its file (or found it written by an earlier attempt)."""

    instance_id: str
    path: str
    mode: str
    sha256_before: str | None
    sha256_after: str
    bytes: int
    already_applied: bool
    input_slot_refs: list[str]
    output_sha256: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_sha256", sha256_text(self.slot_text()))

    def slot_text(self) -> str:
        """The step's slot: where the file is and what it holds, as JSON."""
        return json.dumps(
            {
                "path": self.path,
                "sha256": self.sha256_after,
                "sha256_before": self.sha256_before,
                "bytes": self.bytes,
                "already_applied": self.already_applied,
            },
            indent=2,
        )

    def summary(self) -> str:
        verb = "already held" if self.already_applied else "wrote"
        return f"{verb} {self.path} ({self.bytes} bytes, sha256:{self.sha256_after[:12]})"

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        assert isinstance(step, WriteFileStep)
        written = {
            "step_id": step.step_id,
            "instance_id": self.instance_id,
            "path": self.path,
            "mode": self.mode,
            "sha256_before": self.sha256_before,
            "sha256_after": self.sha256_after,
            "bytes": self.bytes,
            "already_applied": self.already_applied,
        }
        slot = {
            "slot": step.output_slot,
            "kind": "artifact",
            "agent_id": "workspace",
            "text": self.slot_text(),
            "sha256": self.output_sha256,
            "summary": self.summary(),
        }
        return [(FileWritten, written), (SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.summary()


@dataclass(frozen=True)
class Waiting:
    """The step cannot finish now: it completes when another aggregate's event arrives."""

    reason: str
    awaiting: dict[str, JsonValue] = field(default_factory=dict)
    #: The step's own records of what it waits for (a child run's request), recorded
    #: with the wait, in the same commit.
    records: tuple[EventSpec, ...] = ()


@dataclass(frozen=True)
class AttemptFailure:
    attempt: int
    provider: str
    model: str
    kind: str
    status: int | None
    message: str
    will_retry: bool
    retry_in_s: float
    request: RecordedRequest | None = None

    def fields(self) -> dict[str, Any]:
        """What every failed-attempt event records of it (in a run, a plan or a round)."""
        return {
            "attempt": self.attempt,
            "provider": self.provider,
            "model": self.model,
            "kind": self.kind,
            "status": self.status,
            "message": self.message,
            "will_retry": self.will_retry,
            "retry_in_s": self.retry_in_s,
        }


@dataclass(frozen=True)
class ReplyRejection:
    """One reply that broke the output contract. What its event keeps is bounded: a long
    reply by its head and tail (`reply_digest` names the whole), and its errors."""

    attempt: int
    provider: str
    model: str
    contract: str
    errors: list[str]
    reply: str
    usage: TokenUsage
    will_retry: bool
    request: RecordedRequest | None = None
    reply_digest: ReplyDigest | None = None
    #: What the rejected reply cost (priced models): charged to its step.
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", bounded_errors(self.errors))
        if self.reply_digest is None:
            reply, digest = kept_reply(self.reply)
            object.__setattr__(self, "reply", reply)
            object.__setattr__(self, "reply_digest", digest)


@dataclass(frozen=True)
class StopHookReport:
    """No valid reply after the contract's retries: what STOP_HOOK records, bounded like a
    rejection (`reply_digests` has one entry per reply: None for a reply kept whole)."""

    contract: str
    attempts: int
    errors: list[str]
    replies: list[str]
    request_refs: list[str]
    reply_digests: list[ReplyDigest | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", bounded_errors(self.errors))
        if not self.reply_digests:
            kept = [kept_reply(reply) for reply in self.replies]
            object.__setattr__(self, "replies", [reply for reply, _ in kept])
            object.__setattr__(self, "reply_digests", [digest for _, digest in kept])


@dataclass(frozen=True)
class AgentFacts:
    """Which agent made a call: what a micro-step's event names when there is no outcome."""

    agent_id: str
    tier: str
    provider: str
    model: str


@dataclass(frozen=True)
class AbstentionReport:
    """A T1 agent's triage abstained: the call is recorded before the step fails, so the
    reply that gave the reason (and the tokens it cost) stays in the audit trail."""

    micro: MicroStep
    agent: AgentFacts


#: What an agent step reports while it runs, each recorded as an event at once.
AttemptReport = AttemptFailure | ReplyRejection | StopHookReport | AbstentionReport
