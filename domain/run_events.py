"""Everything that can happen to a run, as past-tense, frozen, closed events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain.events import CallFacts, DomainEvent, JournalRecord, ModelReplyEvent

Phase = Literal["a", "b"]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskSpec(_Value):
    description: str
    args: dict[str, Any] = Field(default_factory=dict)
    session_plan_task_id: int | None = None
    #: The session plan this run is a task of (`session_plan_task_id` names the task).
    plan_id: str | None = None


class RunOrigin(_Value):
    """Who or what started a run: a person (through the CLI or HTTP), a session plan's
    task, a parent run's step, or a policy. A child run carries its root run, its depth
    (the root is 0) and its parent's trace id, so nesting can be bounded and followed."""

    kind: Literal["user", "plan_task", "parent_step", "policy", "fork"]
    #: For a user: how the run was asked for (`cli`, `http`).
    via: str | None = None
    plan_id: str | None = None
    task_id: int | None = None
    parent_run_id: str | None = None
    parent_instance_id: str | None = None
    root_run_id: str | None = None
    depth: int = 0
    #: The depth budget the run was given (seed 004's `--max-depth`, shared by the whole
    #: tree); None for a root, whose budget is its task's or its recipe's.
    max_depth: int | None = None
    #: When the run must have ended (seed 004's timeout): a child's never outlasts its
    #: parent's; past it, the run ends TIMEOUT (21). None: no limit.
    deadline: datetime | None = None
    #: For a policy (and a plan task, which a policy starts): its name.
    policy: str | None = None
    #: For a fork: the run it was forked from, and the step it ran live from.
    source_run_id: str | None = None
    source_step: str | None = None


#: What a run written before origins were recorded is read as.
UNKNOWN_USER = RunOrigin(kind="user")


class RoutingDecision(_Value):
    """What the task router decided (appendix E), recorded when it starts work."""

    routable: bool
    recipe_id: str | None
    reason: str
    matched_pattern: str | None = None
    initial_args: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(_Value):
    input_tokens: int = 0
    output_tokens: int = 0
    #: True when the server reported no usage (or none for one side) and the counts are
    #: estimated from the text: cost figures built on them are estimates too.
    estimated: bool = False


class ReplyDigest(_Value):
    """A model's reply an event does not hold whole: its length and sha256. The event keeps
    its head and tail (a long reply) or nothing (a reply that was only the JSON of the
    event's `output`): what it refers to is still named exactly."""

    chars: int
    sha256: str


class _UsageReply(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def tier(self) -> str: ...
    @property
    def usage(self) -> TokenUsage: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def attempts(self) -> int: ...


def usage_call(role: str, reply: _UsageReply) -> CallFacts:
    """The call facts of a reply event that keeps its usage as a `TokenUsage`."""
    return CallFacts(
        role,
        reply.provider,
        reply.model,
        reply.tier,
        reply.usage.input_tokens,
        reply.usage.output_tokens,
        reply.latency_ms,
        reply.cost_usd,
        reply.attempts,
    )


class DodResult(_Value):
    index: int
    check: dict[str, Any]
    passed: bool
    detail: str
    evidence: Any = None


class RunStarted(DomainEvent):
    type_name: ClassVar[str] = "RunStarted"
    recipe_id: str
    recipe: dict[str, Any]
    fingerprint: str
    task: TaskSpec
    routing: RoutingDecision | None
    session_id: str
    trace_id: str
    total_steps: int
    #: Who or what started the run; None in events written before origins were recorded
    #: (read as a user's).
    origin: RunOrigin | None = None
    #: The escalation ladder of each step that has one (`domain/ladder.py`), by step id,
    #: resolved when the run started (the step's own, else its role's in models.json).
    ladders: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: The workspace the run reads and writes (its folder, resolved); None in events
    #: written before it was recorded. Another workspace sharing the store never
    #: continues the run unless told to (a workspace moved or copied).
    workspace: str | None = None
    #: The model serving each role of the recipe when it started (`provider:model`), so a
    #: resumed or retried run goes on with them whatever the settings are by then (a
    #: `CONTROLROOM_MODEL_<ROLE>` set for the first process only); empty in older events.
    models: dict[str, str] = Field(default_factory=dict)


class StepStarted(DomainEvent):
    type_name: ClassVar[str] = "StepStarted"
    step_index: int
    step_id: str
    #: `draft` the first time a recipe step runs in a run, `draft#2` the second, ...
    #: Empty in events written before steps could repeat: read it as the step id.
    instance_id: str = ""
    #: The step's kind (`tool`, `agent`, ...); empty in older events: read it from the phase.
    kind: str = ""
    phase: Phase
    tool: str | None = None
    agent_archetype: str | None = None
    output_slot: str


class ReceiptIssued(DomainEvent):
    """A tool ran. The full payload lives here; the slot only points at it.

    A long output is stored once per store as a text (its JSON, keys in their order,
    domain/texts.py) and the stored event keeps `output: null` and the text's sha256 in
    `output_text_sha256`: a tool reading an unchanged workspace gives the same output run
    after run. Reading the event puts the output back (eventstore/mapper.py), so every
    reader sees it whole.
    """

    type_name: ClassVar[str] = "ReceiptIssued"

    receipt_id: str
    session_id: str
    step_id: str
    tool: str
    args: dict[str, Any]
    input_slot_refs: list[str]
    output: Any
    output_sha256: str
    summary: str
    duration_ms: float
    output_text_sha256: str | None = None

    def detached_texts(self) -> dict[str, str]:
        return {"output": self.output_text_sha256} if self.output_text_sha256 else {}


class AgentResponded(ModelReplyEvent):
    type_name: ClassVar[str] = "AgentResponded"
    step_id: str
    agent_archetype: str
    agent_id: str
    tier: str
    provider: str
    model: str
    prompt_type: str
    prompt_variant: str
    prompt_hash: str
    input_slot_refs: list[str]
    output: str
    output_sha256: str
    usage: TokenUsage
    latency_ms: float
    attempts: int = 1
    cost_usd: float | None = None
    #: The recorded request (`ModelRequestRecorded.ref`) this reply answers.
    request_ref: str | None = None
    #: The output contract the reply satisfied; `output` is then its JSON, as extracted.
    contract: str | None = None
    #: The reply as received, when it held more than the JSON of `output` (fenced, after a
    #: preamble); a long one only by its head and tail (see `raw_output_digest`).
    raw_output: str | None = None
    #: Set when the reply differs from `output` but `raw_output` does not hold it whole:
    #: cut to its head and tail, or left out because it was that JSON alone (formatted
    #: another way). Absent in events written before replies were bounded.
    raw_output_digest: ReplyDigest | None = None
    #: `finding` when a T1 agent's step ran as micro-calls (triage, finding, evidence).
    micro_step: str | None = None
    #: True for a checked loop (`for_each` with `item_check`): this reply repeats its last
    #: item's accepted draft, each draft and check being recorded as a call of its own
    #: (`ForEachItemDrafted`, `ForEachItemChecked`), so it is not a call to count again.
    repeats_items: bool = False

    def call(self) -> CallFacts:
        return usage_call(self.agent_archetype, self)


class AgentMicroStepResponded(ModelReplyEvent):
    """One micro-call of a T1 agent's step (seed 000, "Tier-Based Step Sizing"): `triage`
    before the step's own call, `evidence` after it. The middle call, the finding, is the
    step's `AgentResponded` (its `micro_step` says so) and its output is the slot's text."""

    type_name: ClassVar[str] = "AgentMicroStepResponded"

    step_id: str
    instance_id: str = ""
    micro_step: Literal["triage", "evidence"]
    agent_archetype: str
    agent_id: str
    tier: str
    provider: str
    model: str
    prompt_type: str
    prompt_variant: str
    prompt_hash: str
    output: str
    output_sha256: str
    usage: TokenUsage
    latency_ms: float
    attempts: int = 1
    cost_usd: float | None = None
    request_ref: str | None = None
    #: For `triage`: `focus` or `abstain`. For `evidence`: whether the cited input slot is
    #: one the step read and the quoted passage is really in it, and if not, why.
    decision: str | None = None
    verified: bool | None = None
    problem: str | None = None

    def call(self) -> CallFacts:
        return usage_call(self.agent_archetype, self)


class ModelRequestRecorded(DomainEvent):
    """The exact body sent to a model (system text, user text, decoding parameters,
    structured-output schema), recorded once per run under its content hash; agent events
    refer to it by `ref`. Keys travel in headers and never appear here."""

    type_name: ClassVar[str] = "ModelRequestRecorded"

    ref: str
    provider: str
    model: str
    body: dict[str, Any]


class AgentReplyRejected(DomainEvent):
    """A reply that broke the step's output contract; `will_retry` says whether the agent
    is asked again, with a stricter prompt naming these errors."""

    type_name: ClassVar[str] = "AgentReplyRejected"

    step_id: str
    instance_id: str = ""
    attempt: int
    provider: str
    model: str
    contract: str
    errors: list[str]
    #: The reply; a long one only by its head and tail, and then `reply_digest` is set.
    reply: str
    request_ref: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    will_retry: bool
    reply_digest: ReplyDigest | None = None
    #: What the rejected reply cost (priced models; None otherwise or in older events).
    cost_usd: float | None = None


class StopHook(DomainEvent):
    """STOP_HOOK (seed 001, C): an agent gave no valid reply after the contract's retries.
    The pipeline halts; a policy opens an "agent output invalid" issue with the replies."""

    type_name: ClassVar[str] = "StopHook"

    step_id: str
    instance_id: str = ""
    agent_archetype: str
    prompt_type: str
    contract: str
    attempts: int
    errors: list[str]
    #: The raw replies, one per attempt, as evidence; a long one by its head and tail.
    replies: list[str]
    request_refs: list[str] = Field(default_factory=list)
    #: One per reply: None when the reply is kept whole, else its length and sha256.
    #: Empty in events written before replies were bounded (they hold every reply whole).
    reply_digests: list[ReplyDigest | None] = Field(default_factory=list)


class RunRetried(DomainEvent):
    """The user continues a failed run from a step (the failed one, or an earlier one);
    that step and the ones after it run again as new instances (`draft#2`)."""

    type_name: ClassVar[str] = "RunRetried"

    step_index: int
    step_id: str
    previous_error: str | None = None
    #: The models serving the roles from here on: the settings as they are at the retry
    #: (the user decided to go on, perhaps after fixing them); empty in older events.
    models: dict[str, str] = Field(default_factory=dict)


class ModelAttemptFailed(DomainEvent):
    """One failed attempt at an agent's model call; `will_retry` says what happens next."""

    type_name: ClassVar[str] = "ModelAttemptFailed"

    step_id: str
    attempt: int
    provider: str
    model: str
    kind: str
    status: int | None
    message: str
    will_retry: bool
    retry_in_s: float
    request_ref: str | None = None


class SlotWritten(DomainEvent):
    type_name: ClassVar[str] = "SlotWritten"
    slot: str
    kind: Literal["pointer", "artifact"]
    sha256: str
    summary: str
    receipt_id: str | None = None
    agent_id: str | None = None
    text: str | None = None


class FileWriteIntended(JournalRecord):
    """A `write_file` step is about to write: committed before the file is touched, so a
    resumed run can tell a write that happened (the file has `sha256_intended`) from one
    that did not (`sha256_before`) from someone else's edit (neither)."""

    type_name: ClassVar[str] = "FileWriteIntended"
    path: str
    mode: Literal["create", "replace"]
    #: The file's hash when the step read it; None: there was no file.
    sha256_before: str | None
    sha256_intended: str
    bytes: int


class FileWritten(DomainEvent):
    """A workspace file was written (or found already written: `already_applied`)."""

    type_name: ClassVar[str] = "FileWritten"
    step_id: str
    instance_id: str
    path: str
    mode: Literal["create", "replace"]
    sha256_before: str | None
    sha256_after: str
    bytes: int
    already_applied: bool = False


class StepCompleted(DomainEvent):
    type_name: ClassVar[str] = "StepCompleted"
    step_index: int
    step_id: str
    instance_id: str = ""
    output_slot: str
    output_hash: str
    output_preview: str
    input_slot_refs: list[str]


class StepFailed(DomainEvent):
    type_name: ClassVar[str] = "StepFailed"
    step_index: int
    step_id: str
    instance_id: str = ""
    error_type: str
    error: str


class DodChecked(DomainEvent):
    type_name: ClassVar[str] = "DodChecked"
    passed: bool
    results: list[DodResult]


class RunCompleted(DomainEvent):
    type_name: ClassVar[str] = "RunCompleted"
    #: Seed 004's outcome code: 0 SUCCESS, 12 PARTIAL_SUCCESS (a step was deferred). None
    #: in events written before codes were recorded (read as 0).
    outcome: int | None = None


class RunFailed(DomainEvent):
    type_name: ClassVar[str] = "RunFailed"
    error: str
    step_id: str | None = None
    #: Seed 004's outcome code (1 FAILURE, 10 NEEDS_REFINEMENT, 11 NEEDS_ESCALATION, ...);
    #: None in events written before codes were recorded (read as 1).
    outcome: int | None = None


class HumanAnswered(DomainEvent):
    """A person answered the step that waited for one (the ladder's last rung): the run's
    flow decides what follows, with the resolution (the step runs again with it)."""

    type_name: ClassVar[str] = "HumanAnswered"
    step_id: str
    instance_id: str
    resolution: str
    by: str = "user"
    issue_id: str | None = None
    #: The model the person chose for the step's next run, if they chose one.
    model: str | None = None


class RunCancelled(DomainEvent):
    type_name: ClassVar[str] = "RunCancelled"
    reason: str
    step_index: int
    #: Seed 004's 20 INTERRUPTED (None in runs recorded before codes were).
    outcome: int | None = None


class RunResumed(DomainEvent):
    type_name: ClassVar[str] = "RunResumed"
    step_index: int


class RunClaimed(DomainEvent):
    """A process took the run over to advance it. `owner` names it (`host:pid`) so a run
    whose owner is gone can be told from one that is advancing; workers will renew it as a
    lease."""

    type_name: ClassVar[str] = "RunClaimed"
    owner: str
    #: Until when the claim holds unless renewed (a new RunClaimed by the same owner);
    #: after it another worker may take the run over. None: held until released.
    lease_expires_at: datetime | None = None


class RunReleased(DomainEvent):
    """The owner let the run go (a worker shutting down): any worker may claim it now."""

    type_name: ClassVar[str] = "RunReleased"
    owner: str


class StepWaiting(DomainEvent):
    """The step waits for an event of another aggregate (a child run finishing, a human
    answering); a policy delivers it, and the step completes then."""

    type_name: ClassVar[str] = "StepWaiting"
    instance_id: str
    step_id: str
    reason: str
    awaiting: dict[str, Any] = Field(default_factory=dict)


class RunForked(DomainEvent):
    """A fork's record (right after its `RunStarted`) of what it took and what it changed:
    the steps before `from_step` are the source run's, their events copied (no tool or
    model called again); from `from_step` on the fork ran live with these changes."""

    type_name: ClassVar[str] = "RunForked"
    source_run_id: str
    from_step: str
    #: How many of the source's events were copied.
    copied_events: int
    #: Each template replaced: prompt_type, file, sha256_before, sha256_after.
    prompts: list[dict[str, Any]] = Field(default_factory=list)
    #: Each role served by another model: role -> `provider:model`.
    models: dict[str, str] = Field(default_factory=dict)
    #: The task's args that changed, with their new values.
    args: dict[str, Any] = Field(default_factory=dict)
    #: Each replaced template's text, by prompt type: a fork resumed later (another
    #: process, a worker) runs on with the same templates, not the workspace's own.
    prompt_texts: dict[str, str] = Field(default_factory=dict)


TERMINAL_EVENTS = (RunCompleted, RunFailed, RunCancelled)
