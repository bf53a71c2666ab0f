"""The typed answers of every read: what the CLI prints, what HTTP returns, what OpenAPI says.

The shapes are appendix D's where it has one. A field declared with `omitted_when_none` is
left out of the JSON while it has no value (`resumed` before any resume, `damage` on an
intact run): the appendix's shapes stay exactly as they were, and clients still find each
field described in the schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.projections.statuses import RunStatus


def _is_none(value: object) -> bool:
    return value is None


def omitted_when_none(description: str) -> Any:
    return Field(default=None, exclude_if=_is_none, description=description)


class ViewModel(BaseModel):
    """Built by our own folds: closed, so a shape changes only here."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class EventPart(BaseModel):
    """Copied from an event's payload: a field added to that event later passes through."""

    model_config = ConfigDict(frozen=True, extra="allow")


StepStatus = Literal["running", "waiting", "answered", "done", "failed", "cancelled"]
DAMAGE = "why the run's view cannot be trusted (an event missing, out of order or unreadable)"
OWNER = "the process that holds the run to advance it (`host:pid`); absent once released"
LEASE = "until when the owner's claim holds unless renewed; absent: until released"


class RunSummary(ViewModel):
    """One row of `GET /api/runs` and `controlroom runs`."""

    run_id: str
    recipe_id: str
    status: RunStatus
    created_at: str
    completed_at: str | None
    description: str
    owner: str | None = omitted_when_none(OWNER)
    lease_expires_at: str | None = omitted_when_none(LEASE)
    damage: str | None = omitted_when_none(DAMAGE)


class TaskView(ViewModel):
    description: str


class StepSummary(ViewModel):
    """A step as the consolidated view lists it; optional fields only when they apply."""

    step_id: str
    instance_id: str | None = omitted_when_none(
        "the step's instance (`draft#2`), when the recipe step ran more than once"
    )
    phase: str
    kind: str | None = omitted_when_none("the step's kind, when it is neither tool nor agent")
    status: StepStatus
    tool: str | None = omitted_when_none("the tool of a tool step")
    agent_archetype: str | None = omitted_when_none("the role of an agent step")
    output_slot: str
    output_preview: str | None = omitted_when_none("a one-line preview, once it completed")
    error: str | None = omitted_when_none("why it failed")
    spent_usd: float | None = omitted_when_none(
        "what the instance's model replies cost, rejected ones and ladder calls included"
    )
    copied: bool | None = omitted_when_none(
        "a fork's step taken from its source's events: not run again, not paid again"
    )


class RungView(ViewModel):
    """One rung of an escalation ladder, or a review gate's rollback (`FlowDecided`)."""

    at: str
    kind: str = Field(
        description="rollback, accept, escalate, consult, triage, human, answered, deferred"
    )
    subject: str | None = None
    instance_id: str | None = None
    from_model: str | None = None
    to_model: str | None = None
    gate: str | None = None
    reason: str


class LoopTurnView(ViewModel):
    """One turn of an adaptive loop (seed 003): what code judged, what the Showrunner was
    shown and chose, or the stall that asked no one (`projections/loop_turns.py`)."""

    turn: int | None
    at: str
    iteration: int | None = omitted_when_none("library steps run before this turn")
    criteria: dict[str, bool] = Field(
        default_factory=dict, description="each stabilization criterion: whether it held"
    )
    held: int | None = omitted_when_none("how many criteria held")
    candidates: list[str] = Field(
        default_factory=list, description="the steps code allowed (a stall: none asked)"
    )
    choice: str | None = omitted_when_none("the step chosen (by the Showrunner or fallback)")
    role: str | None = omitted_when_none("the role it was woken as, when not its recommended")
    reason: str | None = omitted_when_none("the Showrunner's reason, or the flow's")
    fallback: bool | None = omitted_when_none(
        "true: the Showrunner gave no usable choice; the typical flow chose"
    )
    errors: list[str] | None = omitted_when_none("why the Showrunner's reply was not used")
    instance_id: str | None = omitted_when_none("the step instance the turn started")
    stall: str | None = omitted_when_none("a stall: why the loop is not converging")
    subject: str | None = omitted_when_none("a stall: the step blamed")
    notes: str | None = omitted_when_none("the Showrunner's notes to the chosen step")
    collaboration: str | None = omitted_when_none("a pending collaboration: approve or deny")
    collaborator_for: str | None = omitted_when_none("the step a collaborator helps")
    collaborator_role: str | None = omitted_when_none("the collaborator's role")


class LoopEndingView(ViewModel):
    ending: str | None = Field(description="stable (every criterion held) or capped")
    turn: int | None
    iteration: int | None
    criteria: dict[str, bool]
    held: int | None
    reason: str | None
    at: str


class LoopView(ViewModel):
    """An adaptive loop's turns, in order, and how it ended (`FlowDecided.loop`)."""

    name: str | None = Field(description="the loop's name (its recipe's `loop.name`)")
    turns: list[LoopTurnView]
    ending: LoopEndingView | None = Field(description="stable or capped; null while it runs")


class PersonWait(ViewModel):
    instance_id: str
    owner: str | None = None
    issue_id: str | None = None


class ParentView(ViewModel):
    """Where a child run stands in its tree (seed 004)."""

    run_id: str | None
    instance_id: str | None
    root_run_id: str | None
    depth: int
    max_depth: int | None = None


class ForkListed(ViewModel):
    """A run forked from this one (`controlroom fork`, or an eval's fork)."""

    run_id: str
    step: str | None
    created_at: str | None = None


class ForkSource(ViewModel):
    """The run a fork was taken from, and the step it ran live from (`controlroom fork`)."""

    run_id: str | None
    step: str | None


class EvalForkListed(ViewModel):
    """A fork an eval ran (`EvalForkStarted`)."""

    run_id: str
    source_run_id: str
    step: str


class FamilyTotals(ViewModel):
    """A fork family: the run forks were first taken from and every fork below it, each
    run's own spend summed (a fork's copies of its source's steps left out)."""

    root_run_id: str = Field(description="the family's first source")
    runs: int
    cost_usd: float = Field(description="what the family paid: each run's own replies")
    input_tokens: int
    output_tokens: int
    copied_cost_usd: float = Field(
        description="what the forks' copied steps had cost their source (not paid again)"
    )


class EvalTotals(ViewModel):
    """An eval's forks, their own spend summed (their copies of the sources' steps left
    out): what the eval cost beyond its own steps."""

    forks: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    copied_cost_usd: float = Field(
        description="what the forks' copied steps had cost their sources (not paid again)"
    )


class ChildView(ViewModel):
    """A run this run's `child_run` step started."""

    run_id: str
    instance_id: str
    recipe_id: str
    index: int
    attempt: int
    status: str
    started_at: str
    outcome: int | None = None
    ended_at: str | None = None


class TreeTotals(ViewModel):
    """The run and every run below it, rolled up (`projections/run_tree.py`)."""

    runs: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    outcomes: dict[str, int]
    deepest: int


class SlotSummary(ViewModel):
    type: Literal["pointer", "artifact"]
    preview: str


class DodResultView(EventPart):
    index: int
    check: dict[str, Any]
    passed: bool
    detail: str
    evidence: Any = None


class DodView(ViewModel):
    passed: bool
    results: list[DodResultView]


class RoutingView(EventPart):
    """What the task router decided (appendix E)."""

    routable: bool
    recipe_id: str | None
    reason: str
    matched_pattern: str | None = None
    initial_args: dict[str, Any] = Field(default_factory=dict)


class RunDetail(ViewModel):
    """`GET /api/runs/{id}` and `controlroom show`: the consolidated view (appendix D)."""

    run_id: str
    recipe_id: str
    session_id: str
    trace_id: str
    status: RunStatus
    phase: str | None
    current_step_index: int
    total_steps: int
    created_at: str
    updated_at: str
    completed_at: str | None
    task: TaskView
    recipe_fingerprint: str
    error: str | None
    resumed: int | None = omitted_when_none("how many times the run was resumed")
    retried: int | None = omitted_when_none("how many times the user retried the failed run")
    owner: str | None = omitted_when_none(OWNER)
    lease_expires_at: str | None = omitted_when_none(LEASE)
    damage: str | None = omitted_when_none(DAMAGE)
    outcome: int | None = omitted_when_none(
        "seed 004's code once it ended: 0 success, 1 failure, 10 needs refinement, "
        "11 needs escalation, 12 partial success, 20 interrupted"
    )
    cost_usd: float | None = omitted_when_none(
        "what every model reply of the run cost, rejected ones included (priced models); "
        "a fork's copies of its source's replies are not its cost (`copied_cost_usd`)"
    )
    copied_cost_usd: float | None = omitted_when_none(
        "a fork: what the source's replies it copied had cost (paid by the source, not again)"
    )
    ladder: list[RungView] | None = omitted_when_none(
        "the escalation rungs and gate rollbacks the run climbed, in order"
    )
    waiting_for_person: PersonWait | None = omitted_when_none(
        "the step waits for a person's answer to this issue"
    )
    loop: LoopView | None = omitted_when_none(
        "an adaptive loop's turns (seed 003): criteria, candidates, choice, fallback, stall"
    )
    parent: ParentView | None = omitted_when_none("the run that started this one, as a step")
    forked_from: ForkSource | None = omitted_when_none(
        "for a fork: the run it was taken from and the step it ran live from"
    )
    forks: list[ForkListed] | None = omitted_when_none(
        "the runs forked from this one, in the order they were started"
    )
    children: list[ChildView] | None = omitted_when_none(
        "the runs this run's child_run steps started, in order"
    )
    tree: TreeTotals | None = omitted_when_none(
        "this run and every run below it, rolled up (runs with children only)"
    )
    family: FamilyTotals | None = omitted_when_none(
        "a fork or a run forked from: its fork family's own spend, summed"
    )
    eval_forks: list[EvalForkListed] | None = omitted_when_none(
        "an eval: the forks it ran, in the order they were started"
    )
    eval: EvalTotals | None = omitted_when_none("an eval: its forks' own spend, summed")
    steps: list[StepSummary]
    cache_summary: dict[str, SlotSummary]
    dod: DodView | None
    routing: RoutingView | None
    version: int = Field(description="the run's last event folded into this view")


class UsageView(EventPart):
    input_tokens: int = 0
    output_tokens: int = 0


class MicroStepView(ViewModel):
    """One call of a T1 agent's step: `triage`, `finding` (the step's reply), `evidence`."""

    micro_step: Literal["triage", "finding", "evidence"]
    prompt_type: str
    output_preview: str
    usage: UsageView
    latency_ms: float
    request_ref: str | None
    decision: str | None = omitted_when_none("triage: `focus` or `abstain`")
    verified: bool | None = omitted_when_none(
        "evidence: whether the cited input was one the step read and the quote is in it"
    )
    problem: str | None = omitted_when_none("evidence: why the citation did not check out")


class StepView(ViewModel):
    """One entry of `GET /api/runs/{id}/steps`: a step instance with its observability."""

    step_index: int
    step_id: str
    instance_id: str = Field(description="`draft`, then `draft#2` if the step runs again")
    kind: str = Field(description="`tool`, `agent`, or a kind added later")
    phase: str
    tool: str | None
    agent_archetype: str | None
    agent_id: str | None
    status: StepStatus
    output_slot: str
    receipt_id: str | None
    input_slot_refs: list[str]
    output_hash: str | None
    output_preview: str | None
    started_at: str
    completed_at: str | None
    error: str | None
    waiting_for: str | None = omitted_when_none("what a waiting step waits for")
    tier: str | None = None
    provider: str | None = None
    model: str | None = None
    prompt_hash: str | None = None
    usage: UsageView | None = None
    latency_ms: float | None = None
    attempts: int | None = None
    cost_usd: float | None = None
    request_ref: str | None = omitted_when_none(
        "the recorded request this reply answers (`controlroom show RUN --request STEP`)"
    )
    contract: str | None = omitted_when_none("the output contract the reply satisfied")
    rejected_replies: int | None = omitted_when_none("replies refused by the contract")
    stop_hook: dict[str, Any] | None = omitted_when_none(
        "STOP_HOOK: the contract, attempts and errors when no reply was valid"
    )
    micro_steps: list[MicroStepView] | None = omitted_when_none(
        "a T1 agent's three recorded calls (triage, finding, evidence), in order"
    )
    spent_usd: float | None = omitted_when_none(
        "what the instance's replies cost, rejected ones and ladder calls included"
    )
    ladder_calls: list[dict[str, Any]] | None = omitted_when_none(
        "the consult, synthesis and triage calls a ladder rung made around the step"
    )
    triage: dict[str, Any] | None = omitted_when_none("the triage rung's verdict")
    copied: bool | None = omitted_when_none(
        "a fork's step taken from its source's events: not run again, not paid again"
    )


class PointerSlot(ViewModel):
    """A phase A slot: it points at the receipt that holds the tool's full output."""

    slot: str
    type: Literal["pointer"] = "pointer"
    receipt_id: str | None
    sha256: str
    summary: str


class ArtifactSlot(ViewModel):
    """A phase B slot: an agent's text, in full."""

    slot: str
    type: Literal["artifact"] = "artifact"
    agent_id: str | None
    text: str
    sha256: str
    summary: str


#: `GET /api/runs/{id}/cache/{slot}`.
SlotView = Annotated[PointerSlot | ArtifactSlot, Field(discriminator="type")]


class IssueComment(ViewModel):
    at: str
    author: str
    text: str


class IssueHistoryEntry(ViewModel):
    at: str
    event: str
    by: str
    text: str


class IssueView(ViewModel):
    """`GET /api/issues` and `controlroom issues`: something a run found for a person."""

    issue_id: str
    status: Literal["open", "closed"]
    opened_at: str
    kind: str
    title: str
    detail: str
    run_id: str | None
    session_id: str | None
    recipe_id: str | None
    check: dict[str, Any] | None = None
    evidence: Any = None
    resolution: str | None = omitted_when_none("how a closed issue was resolved")
    closed_at: str | None = omitted_when_none("when it was closed")
    runs: list[str] = Field(
        default_factory=list, description="every run that found it: the first, then recurrences"
    )
    comments: list[IssueComment] = Field(default_factory=list)
    history: list[IssueHistoryEntry] = Field(
        default_factory=list, description="opened, commented, closed, reopened, found again"
    )


class TrailEntry(ViewModel):
    """One line of an issue's audit trail: a packet, a receipt, a tool receipt, a STOP_HOOK."""

    model_config = ConfigDict(extra="allow")
    run_id: str
    kind: Literal["packet", "receipt", "tool_receipt", "stop_hook"]
    at: str
    step_id: str | None = None
    actor: str | None = None
    summary: str = ""
    excerpt: str | None = None
    packet_id: str | None = None
    receipt_id: str | None = None
    has_report: bool = False


class IssueDetail(IssueView):
    """`GET /api/issues/{id}`: the issue with its audit trail, in the order it happened."""

    trail: list[TrailEntry] = Field(default_factory=list)


class AuditEvent(ViewModel):
    version: int
    type: str
    timestamp: str
    prev_hash: str
    event_hash: str
    data: dict[str, Any]


class AuditTrail(ViewModel):
    """`GET /api/runs/{id}/audit`: the run's events with their hash chain."""

    run_id: str
    events: list[AuditEvent]


class RunState(ViewModel):
    """The answer to starting or cancelling a run."""

    run_id: str
    status: RunStatus | Literal["queued"] = Field(
        description="`queued`: recorded for a worker to perform, not performed here"
    )


class RecipeSummary(ViewModel):
    recipe_id: str
    label: str
    task_patterns: list[str]
    total_steps: int
    required_args: list[str]
    bundled: bool


class ProjectionStatus(ViewModel):
    """`controlroom projections status`: how far a projection has read the log."""

    name: str
    position: int = Field(description="the last log position applied")
    head: int = Field(description="the log's last position")
    lag: int = Field(description="positions recorded after `position`")
