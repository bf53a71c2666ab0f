"""The ConferenceRound aggregate (seed 000, "Mode A: Conference"): one user message, the
Chief's evidence (phase 1: tools under the round's policy, a receipt for each call), every
role's reply to the same evidence (phase 2: in parallel, no tools, validated for grounding),
and the close (a transcript issue with the receipts linked; nothing carried to the next
round).

Replies are recorded in role order, whatever order the agents finished in, so the order of
phase 2 never changes what is recorded about it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.errors import BadInputError
from controlroom.domain.events import CallFacts, DomainEvent, ModelReplyEvent


class RoundOpened(DomainEvent):
    type_name: ClassVar[str] = "RoundOpened"
    question: str
    roles: list[str]
    allowed_tools: list[str]
    require_tool: bool
    session_id: str


class ToolCallRefused(DomainEvent):
    """The Chief asked for a tool the round's policy does not allow (server-enforced)."""

    type_name: ClassVar[str] = "ToolCallRefused"
    tool: str
    reason: str


class EvidenceReceipt(DomainEvent):
    """A phase-1 tool call and its receipt, in the round."""

    type_name: ClassVar[str] = "EvidenceReceipt"
    receipt_id: str
    tool: str
    args: dict[str, Any]
    summary: str
    output_sha256: str
    duration_ms: float
    #: The start of the output as the Chief was shown it: a resumed round shows it again.
    #: None in events written before rounds could resume.
    shown: str | None = None


class EvidenceClosed(DomainEvent):
    """Phase 1 is over: this is the evidence every role gets."""

    type_name: ClassVar[str] = "EvidenceClosed"
    evidence: str
    chief_calls: int


class AgentCallRecorded(ModelReplyEvent):
    """One model call of a role's turn (T1 makes three: triage, finding, evidence)."""

    type_name: ClassVar[str] = "AgentCallRecorded"
    role: str
    micro_step: str
    tier: str
    provider: str
    model: str
    output: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    #: With a price table (None without one, and in events written before costs were kept).
    cost_usd: float | None = None
    attempts: int = 1

    def call(self) -> CallFacts:
        return CallFacts(
            self.role,
            self.provider,
            self.model,
            self.tier,
            self.input_tokens,
            self.output_tokens,
            self.latency_ms,
            self.cost_usd,
            self.attempts,
        )


class AgentAttemptFailed(DomainEvent):
    """One failed attempt at a role's model call in the round (a transport fault: 429, 5xx,
    a refused connection, a timeout); `will_retry` says whether the engine asked again."""

    type_name: ClassVar[str] = "AgentAttemptFailed"
    role: str
    prompt_type: str
    attempt: int
    provider: str
    model: str
    kind: str
    status: int | None = None
    message: str
    will_retry: bool
    retry_in_s: float = 0.0


class ReplyAccepted(DomainEvent):
    type_name: ClassVar[str] = "ReplyAccepted"
    role: str
    text: str
    abstained: bool
    citations: list[dict[str, Any]] = Field(default_factory=list)


class ReplyRejected(DomainEvent):
    """A grounding failure: the reply broke an evidence rule (not a tool failure)."""

    type_name: ClassVar[str] = "ReplyRejected"
    role: str
    text: str
    reason: str


class RepliesCollected(DomainEvent):
    type_name: ClassVar[str] = "RepliesCollected"


class RoundFailed(DomainEvent):
    type_name: ClassVar[str] = "RoundFailed"
    reason: str


class RoundClosed(DomainEvent):
    type_name: ClassVar[str] = "RoundClosed"
    issue_id: str


class ConferenceRound(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.question = ""
        self.roles: list[str] = []
        self.allowed_tools: list[str] = []
        self.require_tool = False
        self.session_id = ""
        self.receipts: dict[str, EvidenceReceipt] = {}
        self.refused: list[ToolCallRefused] = []
        self.evidence: str | None = None
        self.replies: dict[str, ReplyAccepted | ReplyRejected] = {}
        self.calls: list[AgentCallRecorded] = []
        self.failed_attempts: list[AgentAttemptFailed] = []
        self.status = "open"
        self.error: str | None = None
        self.issue_id: str | None = None

    @classmethod
    def open(
        cls,
        round_id: str,
        at: datetime,
        *,
        question: str,
        roles: list[str],
        allowed_tools: list[str],
        require_tool: bool,
        session_id: str,
    ) -> ConferenceRound:
        if not question.strip():
            raise BadInputError("the question is empty")
        if not roles or len(set(roles)) != len(roles):
            raise BadInputError("name each role once (at least one)")
        conference = cls(round_id)
        conference._trigger(
            RoundOpened,
            at,
            question=question,
            roles=roles,
            allowed_tools=allowed_tools,
            require_tool=require_tool,
            session_id=session_id,
        )
        return conference

    def allows(self, tool: str) -> bool:
        return not self.allowed_tools or tool in self.allowed_tools

    def refuse_tool(self, at: datetime, tool: str, reason: str) -> None:
        self._trigger(ToolCallRefused, at, tool=tool, reason=reason)

    def record_receipt(self, at: datetime, **fields: Any) -> None:
        if not self.allows(fields["tool"]):
            raise BadInputError(f"tool '{fields['tool']}' is not allowed in this round")
        self._trigger(EvidenceReceipt, at, **fields)

    def close_evidence(self, at: datetime, evidence: str, chief_calls: int) -> None:
        if self.require_tool and not self.receipts:
            raise BadInputError("this round requires a tool call before the evidence closes")
        self._trigger(EvidenceClosed, at, evidence=evidence, chief_calls=chief_calls)

    def record_call(self, at: datetime, **fields: Any) -> None:
        self._trigger(AgentCallRecorded, at, **fields)

    def record_failed_attempt(self, at: datetime, **fields: Any) -> None:
        self._trigger(AgentAttemptFailed, at, **fields)

    def record_reply(self, at: datetime, role: str, text: str, verdict: Any) -> None:
        """One role's reply with its verdict, recorded as soon as it is in: a round resumed
        after a crash asks only the roles that had not answered."""
        if role in self.replies:
            return
        if role not in self.roles:
            raise BadInputError(f"'{role}' is not a role of this round")
        if verdict.accepted:
            self._trigger(
                ReplyAccepted,
                at,
                role=role,
                text=text,
                abstained=verdict.abstained,
                citations=[
                    {"kind": c.kind, "ref": c.ref, "quote": c.quote} for c in verdict.citations
                ],
            )
        else:
            self._trigger(ReplyRejected, at, role=role, text=text, reason=verdict.reason)

    def collect(self, at: datetime) -> None:
        """Every role has replied: the round is ready to close."""
        if self.status == "open" and all(role in self.replies for role in self.roles):
            self._trigger(RepliesCollected, at)

    def fail(self, at: datetime, reason: str) -> None:
        if self.status == "open":
            self._trigger(RoundFailed, at, reason=reason)

    def close(self, at: datetime, issue_id: str) -> None:
        if self.status == "collected":
            self._trigger(RoundClosed, at, issue_id=issue_id)

    def transcript(self) -> str:
        lines = [f"# Conference round {self.id}", "", f"Question: {self.question}", ""]
        lines.append("## Evidence")
        lines += [
            f"- {r.receipt_id} ({r.tool}): {r.summary.splitlines()[0] if r.summary else ''}"
            for r in self.receipts.values()
        ] or ["- (no tool was called)"]
        lines += [f"- refused: {r.tool} ({r.reason})" for r in self.refused]
        lines += ["", "## Replies"]
        for role in self.roles:
            reply = self.replies.get(role)
            if isinstance(reply, ReplyAccepted):
                label = "ABSTAIN" if reply.abstained else "accepted"
                lines += [f"### {role} ({label})", reply.text.strip(), ""]
            elif isinstance(reply, ReplyRejected):
                lines += [f"### {role} (rejected: {reply.reason})", reply.text.strip(), ""]
        return "\n".join(lines).strip() + "\n"

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, RoundOpened):
            self.question, self.roles = event.question, list(event.roles)
            self.allowed_tools, self.require_tool = list(event.allowed_tools), event.require_tool
            self.session_id = event.session_id
        elif isinstance(event, EvidenceReceipt):
            self.receipts[event.receipt_id] = event
        elif isinstance(event, ToolCallRefused):
            self.refused.append(event)
        elif isinstance(event, EvidenceClosed):
            self.evidence = event.evidence
        elif isinstance(event, AgentCallRecorded):
            self.calls.append(event)
        elif isinstance(event, AgentAttemptFailed):
            self.failed_attempts.append(event)
        elif isinstance(event, ReplyAccepted | ReplyRejected):
            self.replies[event.role] = event
        elif isinstance(event, RepliesCollected):
            self.status = "collected"
        elif isinstance(event, RoundFailed):
            self.status, self.error = "failed", event.reason
        elif isinstance(event, RoundClosed):
            self.status, self.issue_id = "closed", event.issue_id


ROUND_EVENTS = frozenset(
    cls.type_name
    for cls in (
        RoundOpened,
        ToolCallRefused,
        EvidenceReceipt,
        EvidenceClosed,
        AgentCallRecorded,
        AgentAttemptFailed,
        ReplyAccepted,
        ReplyRejected,
        RepliesCollected,
        RoundFailed,
        RoundClosed,
    )
)
