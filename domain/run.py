"""The Run aggregate: one execution of a recipe, decided step by step from its events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from controlroom.domain import adaptive_flow as _adaptive_flow  # noqa: F401  (registers it)
from controlroom.domain import untrusted_json
from controlroom.domain.aggregate import Aggregate, E
from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.child_runs import ChildRunsSettled
from controlroom.domain.errors import (
    OtherWorkspaceError,
    RetryStepError,
    RunClaimedError,
    RunStateError,
)
from controlroom.domain.events import DomainEvent, JournalRecord
from controlroom.domain.flow import (
    NO_OVERRIDES,
    Decision,
    FailRun,
    FailureKind,
    FlowPolicy,
    HumanAnswer,
    Overrides,
    PastDecision,
    Performed,
    RunStep,
    RunView,
    StepFailure,
    flow_for,
    instance_id,
    instances_limit,
    is_default,
)
from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.ladder import Laddered, TriageDecided, deferred_slots
from controlroom.domain.ladder_spec import Ladder
from controlroom.domain.outcomes import (
    AbstentionReport,
    AgentOutcome,
    AttemptFailure,
    AttemptReport,
    EventSpec,
    RecordedRequest,
    ReplyRejection,
    StepOutcome,
    StopHookReport,
    ToolOutcome,
    Waiting,
)
from controlroom.domain.packet_steps import ForEachItemCompleted
from controlroom.domain.recipe import Recipe
from controlroom.domain.refs import task_context
from controlroom.domain.run_events import (
    UNKNOWN_USER,
    AgentMicroStepResponded,
    AgentReplyRejected,
    DodChecked,
    DodResult,
    FileWriteIntended,
    FileWritten,
    HumanAnswered,
    ModelAttemptFailed,
    ModelRequestRecorded,
    ReceiptIssued,
    RoutingDecision,
    RunCancelled,
    RunClaimed,
    RunCompleted,
    RunFailed,
    RunForked,
    RunOrigin,
    RunReleased,
    RunResumed,
    RunRetried,
    RunStarted,
    SlotWritten,
    StepCompleted,
    StepFailed,
    StepStarted,
    StepWaiting,
    StopHook,
    TaskSpec,
)
from controlroom.domain.spend import NOTHING, spend_of
from controlroom.domain.steps import AgentStep, StepSpec, ToolStep
from controlroom.domain.texts import detached_output, split_body

__all__ = [
    "AgentOutcome",
    "AttemptFailure",
    "Run",
    "RunStatus",
    "StepInstance",
    "ToolOutcome",
    "Waiting",
]


J = TypeVar("J", bound=JournalRecord)


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})


@dataclass(frozen=True)
class StepInstance:
    """One performance of a recipe step: `draft`, or `draft#2` when it runs again."""

    index: int
    instance_id: str
    step: StepSpec
    #: What its flow changed for this instance (model, prompt additions, args).
    overrides: Overrides = NO_OVERRIDES


def slot_value_of_text(text: str) -> Any:
    """An artifact's value for `$ref` navigation: its JSON if it is a JSON document."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:  # a model wrote it: nested too deep, it is text (parsing would recurse away)
            return untrusted_json.loads(stripped)
        except ValueError:
            return text
    return text


def _reads_any(check: dict[str, Any], slots: set[str]) -> bool:
    """Whether a DoD check reads one of `slots` (its `slot`, or a `$ref`'s root)."""
    if check.get("slot") in slots:
        return True
    refs = [v.get("$ref") for v in check.values() if isinstance(v, dict)]
    return any(isinstance(r, str) and r.split(".", 1)[0].split("[", 1)[0] in slots for r in refs)


class Run(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.status = RunStatus.PENDING
        self.phase: str | None = None
        self.current_step_index = 0
        self.total_steps = 0
        self.recipe: Recipe | None = None
        self.task = TaskSpec(description="")
        self.session_id = ""
        self.trace_id = ""
        self.origin = UNKNOWN_USER
        #: The folder of the workspace the run started in; None for older runs.
        self.workspace: str | None = None
        #: The model of each role when the run started (`provider:model`); empty for older.
        self.models: dict[str, str] = {}
        self.owner = ""
        self.lease_expires_at: datetime | None = None
        self.error: str | None = None
        #: The step instance being performed (or waited on), None between steps and after.
        self.current: StepInstance | None = None
        self.waiting_on: str | None = None
        #: Everything the run's steps have waited for, in order.
        self.waits: list[dict[str, Any]] = []
        self.history: list[Performed] = []
        self.times_started: dict[str, int] = {}
        self.slot_values: dict[str, Any] = {}
        #: What an agent is shown of each slot: a pointer's summary, an artifact's text.
        self.slot_texts: dict[str, str] = {}
        self.receipt_outputs: dict[str, Any] = {}
        self.dod_results: list[DodResult] | None = None
        #: Refs of the model requests recorded in this run (each is recorded once).
        self.request_refs: set[str] = set()
        #: The recipe step index of the step whose failure ended the run, if one did.
        self.failed_step_index: int | None = None
        #: Slots written as artifacts (text) rather than pointers to a receipt.
        self.artifact_slots: set[str] = set()
        #: What each step instance recorded while it ran (`JournalRecord`s), in order.
        self.journal: dict[str, list[JournalRecord]] = {}
        #: Workspace paths this run wrote, with the step that wrote each.
        self.files_written: dict[str, FileWritten] = {}
        #: The flow's recorded decisions, and the overrides they gave step instances.
        self.decisions: list[PastDecision] = []
        self.overrides: dict[str, Overrides] = {}
        #: The escalation ladder of each step that has one, as recorded at the start.
        self.ladders: dict[str, Ladder] = {}
        #: Triage verdicts (RELAX, DEFER, BLOCK) in the order they were given.
        self.triage_verdicts: list[str] = []
        #: Seed 004's outcome code once the run has ended.
        self.outcome: int | None = None
        #: What a fork changed (its templates and models apply whenever it runs on).
        self.fork: RunForked | None = None
        #: What the run's model replies cost, rejected ones included (`domain/spend.py`).
        self.spent = NOTHING
        #: Texts the pending request events refer to by hash (domain/texts.py): the store
        #: writes them once, before the commit that refers to them (`take_texts`).
        self.pending_texts: dict[str, str] = {}

    def _trigger(
        self,
        event_class: type[E],
        at: datetime,
        _attached: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> E:
        if event_class is ModelRequestRecorded:
            body, texts = split_body(fields["body"])
            self.pending_texts.update(texts)
            fields = {**fields, "body": body}
        elif event_class is ReceiptIssued:
            text = detached_output(fields["output"])
            if text is not None:
                digest = sha256_text(text)
                self.pending_texts[digest] = text
                _attached = {"output": fields["output"]}
                fields = {**fields, "output": None, "output_text_sha256": digest}
            else:
                fields = {**fields, "output_text_sha256": None}
        return super()._trigger(event_class, at, _attached, **fields)

    def take_texts(self) -> dict[str, str]:
        texts, self.pending_texts = self.pending_texts, {}
        return texts

    # -- commands ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        run_id: str,
        at: datetime,
        recipe: Recipe,
        task: TaskSpec,
        routing: RoutingDecision | None,
        session_id: str,
        trace_id: str,
        origin: RunOrigin | None = None,
        ladders: dict[str, Ladder] | None = None,
        workspace: str | None = None,
        models: dict[str, str] | None = None,
    ) -> Run:
        run = cls(run_id)
        run._trigger(
            RunStarted,
            at,
            recipe_id=recipe.recipe_id,
            recipe=recipe.snapshot(),
            fingerprint=recipe.fingerprint(),
            task=task,
            routing=routing,
            session_id=session_id,
            trace_id=trace_id,
            total_steps=recipe.total_steps,
            origin=origin,
            ladders={
                step: ladder.model_dump(mode="json", exclude_none=True)
                for step, ladder in (ladders or {}).items()
            },
            workspace=workspace,
            models=dict(models or {}),
        )
        run._start_next(at)
        return run

    def claim(
        self, at: datetime, owner: str, lease_s: float | None = None, *, takeover: bool = False
    ) -> None:
        """A process takes the run over (or renews its lease); recorded with its next
        commit. Refused while another owner's lease is live, unless the caller established
        that owner is gone (`takeover`: a dead process on this host)."""
        self._check_running("be claimed")
        if self.owner and self.owner != owner and self.lease_is_live(at) and not takeover:
            raise RunClaimedError(self.id, self.owner, self.lease_expires_at)
        expires = at + timedelta(seconds=lease_s) if lease_s is not None else None
        if owner != self.owner or expires != self.lease_expires_at:
            self._trigger(RunClaimed, at, owner=owner, lease_expires_at=expires)

    def renew_lease(self, at: datetime, owner: str, lease_s: float) -> None:
        """Extend the owner's lease when half of it has run out (so most step commits carry
        no renewal at all)."""
        if self.owner != owner or self.lease_expires_at is None or self.is_finished:
            return
        if self.lease_expires_at - at < timedelta(seconds=lease_s / 2):
            self._trigger(
                RunClaimed, at, owner=owner, lease_expires_at=at + timedelta(seconds=lease_s)
            )

    def release(self, at: datetime, owner: str) -> None:
        if self.owner == owner and not self.is_finished:
            self._trigger(RunReleased, at, owner=owner)

    def lease_is_live(self, at: datetime) -> bool:
        """Whether the current owner's claim still holds at `at`."""
        if not self.owner:
            return False
        return self.lease_expires_at is None or self.lease_expires_at > at

    def belongs_elsewhere(self, workspace: str) -> bool:
        """Whether the run was started in another workspace than `workspace` (a folder,
        resolved): two workspaces sharing one store keep to their own runs."""
        return self.workspace is not None and self.workspace != workspace

    def check_workspace(self, workspace: str, wanted: str) -> None:
        if self.belongs_elsewhere(workspace):
            raise OtherWorkspaceError(self.id, str(self.workspace), workspace, wanted)

    def claimable(self, at: datetime) -> bool:
        """A worker may take the run: unfinished, not waiting, and nobody's lease is live.
        (A claim with no lease, as the CLI makes, holds until the run ends or is resumed.)"""
        return (
            self.status == RunStatus.RUNNING and not self.is_waiting and not self.lease_is_live(at)
        )

    def next_step(self) -> StepInstance | None:
        """The step instance the engine must perform now; None when the steps are done or
        the current one is waiting for another aggregate."""
        self._check_running("advance")
        if self.current is None or self.waiting_on is not None:
            return None
        return self.current

    @property
    def is_waiting(self) -> bool:
        return self.waiting_on is not None

    @property
    def awaiting(self) -> dict[str, Any]:
        """What the waiting step waits for (`{"kind": "person", "issue_id": ...}`); empty
        when no step waits."""
        return self.waits[-1] if self.is_waiting and self.waits else {}

    @property
    def steps_done(self) -> bool:
        return self.status == RunStatus.RUNNING and self.current is None

    def resume(self, at: datetime) -> None:
        self._check_running("resume")
        self._trigger(RunResumed, at, step_index=self.current_step_index)

    def complete_step(self, at: datetime, outcome: StepOutcome) -> None:
        """Record what the current step produced, and start the next one (same commit)."""
        current = self._expect_current()
        if self.waiting_on is not None:
            raise RunStateError(self.id, f"waiting on '{self.waiting_on}'", "complete it here")
        self._record_outcome(at, current, outcome)

    # The two bundled kinds, by name: kept for readers of the aggregate's API.
    def complete_tool_step(self, at: datetime, outcome: ToolOutcome) -> None:
        self._expect_current(ToolStep)
        self.complete_step(at, outcome)

    def complete_agent_step(self, at: datetime, outcome: AgentOutcome) -> None:
        self._expect_current(AgentStep)
        self.complete_step(at, outcome)

    def wait(self, at: datetime, waiting: Waiting) -> None:
        """The current step waits for an event of another aggregate."""
        current = self._expect_current()
        if self.waiting_on is not None:
            return
        for event_class, fields in waiting.records:
            self._trigger(event_class, at, **fields)
        self._trigger(
            StepWaiting,
            at,
            instance_id=current.instance_id,
            step_id=current.step.step_id,
            reason=waiting.reason,
            awaiting=waiting.awaiting,
        )

    def deliver(self, at: datetime, instance: str, outcome: StepOutcome) -> bool:
        """A policy delivers what a waiting step waited for. Returns False, recording
        nothing, when that instance is not (or no longer) waiting: delivery is idempotent."""
        if self.status != RunStatus.RUNNING or self.waiting_on != instance:
            return False
        assert self.current is not None
        self._record_outcome(at, self.current, outcome)
        return True

    def deliver_failure(
        self, at: datetime, instance: str, error: str, outcome: int, kind: FailureKind = "child"
    ) -> bool:
        """A policy delivers a failure to a waiting step (its child runs ended with a code
        that travels up): the run ends with `outcome`. Idempotent like `deliver`."""
        if self.status != RunStatus.RUNNING or self.waiting_on != instance:
            return False
        self.fail_step(at, "ChildRunFailedError", error, kind, outcome=outcome)
        return True

    def record_for_waiting(self, at: datetime, instance: str, events: list[EventSpec]) -> bool:
        """A policy's records on a step still waiting (a child run started or ended);
        nothing when that instance waits no more."""
        if self.status != RunStatus.RUNNING or self.waiting_on != instance:
            return False
        for event_class, fields in events:
            self._trigger(event_class, at, **fields)
        return True

    def answer(
        self,
        at: datetime,
        instance: str,
        resolution: str,
        by: str = "user",
        issue_id: str | None = None,
        model: str | None = None,
    ) -> bool:
        """A person answers the step waiting for one: the flow decides what follows (the
        ladder runs the step again with the resolution). Returns False, recording nothing,
        when that instance is not (or no longer) waiting: answering is idempotent."""
        if self.status != RunStatus.RUNNING or self.waiting_on != instance:
            return False
        assert self.current is not None
        step_id = self.current.step.step_id
        self._trigger(
            HumanAnswered,
            at,
            step_id=step_id,
            instance_id=instance,
            resolution=resolution,
            by=by,
            issue_id=issue_id,
            model=model,
        )
        self._start_next(at, answer=HumanAnswer(step_id, instance, resolution, by, model))
        return True

    def record_model_attempt(self, at: datetime, report: AttemptReport) -> None:
        """A step's report while it runs: a failed call (any step that calls a model), or an
        agent step's reply that broke the contract, or its STOP_HOOK."""
        current = self._expect_current()
        if isinstance(report, StopHookReport):
            self._stop_hook(at, current, report)
            return
        if isinstance(report, AbstentionReport):
            self._expect_current(AgentStep)
            assert isinstance(current.step, AgentStep)
            for event_class, fields in report.micro.events(
                current.step, current.instance_id, report.agent
            ):
                if event_class is ModelRequestRecorded and fields["ref"] in self.request_refs:
                    continue
                self._trigger(event_class, at, **fields)
            return
        self._record_request(at, report.request)
        if isinstance(report, ReplyRejection):
            self._trigger(
                AgentReplyRejected,
                at,
                step_id=current.step.step_id,
                instance_id=current.instance_id,
                attempt=report.attempt,
                provider=report.provider,
                model=report.model,
                contract=report.contract,
                errors=report.errors,
                reply=report.reply,
                request_ref=report.request.ref if report.request else None,
                usage=report.usage,
                will_retry=report.will_retry,
                reply_digest=report.reply_digest,
                cost_usd=report.cost_usd,
            )
            return
        failure = report
        self._trigger(
            ModelAttemptFailed,
            at,
            step_id=current.step.step_id,
            request_ref=failure.request.ref if failure.request else None,
            **failure.fields(),
        )

    def record_within_step(self, at: datetime, events: list[EventSpec]) -> None:
        """Events a step records before it completes (a loop's finished item, with its
        request, packet and receipt): committed at once, so a resumed step knows them."""
        self._expect_current()
        for event_class, fields in events:
            if event_class is ModelRequestRecorded and fields["ref"] in self.request_refs:
                continue
            self._trigger(event_class, at, **fields)

    def journal_of(self, instance: str, kind: type[J]) -> list[J]:
        """What step instance `instance` recorded of one kind while it ran, in order."""
        return [r for r in self.journal.get(instance, ()) if isinstance(r, kind)]

    @property
    def file_intents(self) -> dict[str, FileWriteIntended]:
        """`write_file` intents by step instance, committed before the file is touched."""
        return {
            instance: intents[-1]
            for instance in self.journal
            if (intents := self.journal_of(instance, FileWriteIntended))
        }

    @property
    def items_done(self) -> dict[str, dict[int, ForEachItemCompleted]]:
        """A `for_each` step's finished items, by step instance then item index."""
        return {
            instance: {item.index: item for item in items}
            for instance in self.journal
            if (items := self.journal_of(instance, ForEachItemCompleted))
        }

    def _stop_hook(self, at: datetime, current: StepInstance, report: StopHookReport) -> None:
        step = current.step
        assert isinstance(step, AgentStep)
        self._trigger(
            StopHook,
            at,
            step_id=step.step_id,
            instance_id=current.instance_id,
            agent_archetype=step.agent_archetype,
            prompt_type=step.prompt_type,
            contract=report.contract,
            attempts=report.attempts,
            errors=report.errors,
            replies=report.replies,
            request_refs=report.request_refs,
            reply_digests=report.reply_digests,
        )

    def _record_request(self, at: datetime, request: RecordedRequest | None) -> None:
        if request is not None and request.ref not in self.request_refs:
            event_class, fields = request.event()
            self._trigger(event_class, at, **fields)

    def retry(
        self, at: datetime, from_step: str | None = None, models: dict[str, str] | None = None
    ) -> None:
        """Continue a failed run (guarantee 6: the user decides): from the step that
        failed, or from an earlier one. That step and every later one run again, as new
        instances (`draft#2`); what they wrote before stays in the log. `models`: the
        roles' models from here on (the settings as they are now)."""
        if self.status != RunStatus.FAILED:
            raise RunStateError(self.id, self.status.value, "retry (only a failed run can)")
        index = self._retry_index(from_step)
        self._trigger(
            RunRetried,
            at,
            step_index=index,
            step_id=self.recipe_steps[index].step_id,
            previous_error=self.error,
            models=dict(models or {}),
        )
        self._start_next(at)

    def _retry_index(self, from_step: str | None) -> int:
        steps = self.recipe_steps
        if from_step is None:
            if self.failed_step_index is None:
                raise RetryStepError(
                    self.id,
                    "no step failed (its Definition of Done did); name the step to continue "
                    "from with --from STEP_ID",
                )
            return self.failed_step_index
        wanted = from_step.split("#", 1)[0]
        ids = [s.step_id for s in steps]
        if wanted not in ids:
            raise RetryStepError(
                self.id, f"no step '{from_step}' in its recipe (steps: {', '.join(ids)})"
            )
        index = ids.index(wanted)
        reached = self.failed_step_index if self.failed_step_index is not None else len(steps) - 1
        if index > reached:
            raise RetryStepError(
                self.id,
                f"step '{wanted}' comes after the step the run stopped at "
                f"('{steps[reached].step_id}'): continue from that one or an earlier one",
            )
        return index

    def fail_step(
        self,
        at: datetime,
        error_type: str,
        error: str,
        kind: FailureKind = "performer",
        *,
        outcome: int | None = None,
    ) -> None:
        """A step failed. The flow decides what follows: with linear flow the run fails
        and the user decides (guarantee 6); another flow may run a step again."""
        current = self._expect_current()
        step_id = current.step.step_id
        self._trigger(
            StepFailed,
            at,
            step_index=current.index,
            step_id=step_id,
            instance_id=current.instance_id,
            error_type=error_type,
            error=error,
        )
        failure = StepFailure(
            current.index, step_id, current.instance_id, kind, error_type, error, outcome
        )
        self._start_next(at, failure)

    def record_dod(self, at: datetime, results: list[DodResult]) -> None:
        self._check_running("check its Definition of Done")
        if self.current is not None:
            raise RunStateError(self.id, "still running steps", "check its Definition of Done")
        passed = all(r.passed for r in results)
        self._trigger(DodChecked, at, passed=passed, results=results)
        deferred = deferred_slots(self.decisions)
        partial = any(
            settled.partial
            for instance in self.journal
            for settled in self.journal_of(instance, ChildRunsSettled)
        ) or any(  # a loop that reached its caps before it was stable (seed 003)
            d.loop and d.loop.get("ending") == "capped" for d in self.decisions
        )
        # A check over a slot a deferred step never wrote does not fail the run: the run is
        # a partial success (seed 004's 12), and the gap is the deferral's record.
        failing = [r for r in results if not r.passed and not _reads_any(r.check, deferred)]
        if passed and not deferred and not partial:
            self._trigger(RunCompleted, at, outcome=0)
        elif not failing:
            self._trigger(RunCompleted, at, outcome=12)
        else:
            self._trigger(
                RunFailed,
                at,
                # "failed" alone reads as the tool breaking; every step ran, and the
                # checks say what the work found.
                error=f"Definition of Done: {len(failing)} check(s) failed (every step ran)",
                outcome=1,
            )

    def cancel(self, at: datetime, reason: str) -> None:
        self._check_running("cancel")
        self._trigger(
            RunCancelled, at, reason=reason, step_index=self.current_step_index, outcome=20
        )

    # -- queries ----------------------------------------------------------------------------

    @property
    def recipe_steps(self) -> list[StepSpec]:
        assert self.recipe is not None
        return self.recipe.steps

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    def task_context(self) -> dict[str, Any]:
        return task_context(
            self.task.description, self.task.args, self.task.session_plan_task_id, self.id
        )

    # -- internals --------------------------------------------------------------------------

    def _check_running(self, wanted: str) -> None:
        if self.status != RunStatus.RUNNING:
            raise RunStateError(self.id, self.status.value, wanted)

    def _expect_current(self, *kinds: type[StepSpec]) -> StepInstance:
        self._check_running("complete a step")
        current = self.current
        if current is None:
            raise RunStateError(self.id, "past its last step", "complete a step")
        if kinds and not isinstance(current.step, kinds):
            raise RunStateError(
                self.id, f"at a {current.step.kind} step", "complete it as another kind"
            )
        return current

    def _record_outcome(self, at: datetime, current: StepInstance, outcome: StepOutcome) -> None:
        for event_class, fields in outcome.events(current.step, self.session_id):
            if event_class is ModelRequestRecorded and fields["ref"] in self.request_refs:
                continue
            if event_class is AgentMicroStepResponded and not fields["instance_id"]:
                fields = {**fields, "instance_id": current.instance_id}
            self._trigger(event_class, at, **fields)
        step = current.step
        self._trigger(
            StepCompleted,
            at,
            step_index=current.index,
            step_id=step.step_id,
            instance_id=current.instance_id,
            output_slot=step.output_slot,
            output_hash=f"sha256:{outcome.output_sha256}",
            output_preview=preview(outcome.preview_source()),
            input_slot_refs=outcome.input_slot_refs,
        )
        # Recorded in the same commit as this completion, so one commit per step suffices
        # and readers still see which step is running.
        self._start_next(at)

    def view(
        self, failure: StepFailure | None = None, answer: HumanAnswer | None = None
    ) -> RunView:
        """The read-only view a flow decides from."""
        assert self.recipe is not None
        return RunView(
            recipe=self.recipe,
            history=tuple(self.history),
            slots=MappingProxyType(self.slot_values),
            decisions=tuple(self.decisions),
            times_started=MappingProxyType(self.times_started),
            failure=failure,
            ladders=MappingProxyType(self.ladders),
            answer=answer,
            triage=tuple(self.triage_verdicts),
        )

    def _start_next(
        self, at: datetime, failure: StepFailure | None = None, answer: HumanAnswer | None = None
    ) -> None:
        """Ask the flow what follows the step that just completed, failed or was answered,
        record its answer when it is not linear's, and act on it (start a step, or fail the
        run). The escalation ladder comes first whatever the recipe's flow."""
        assert self.recipe is not None
        flow = Laddered(flow_for(self.recipe))
        view = self.view(failure, answer)
        decision = self._bounded(self._ask(flow, view), view)
        if not is_default(decision, view):
            self._record_decision(at, flow, view, decision)
        if isinstance(decision, RunStep):
            self._start_step(at, decision.index)
        elif isinstance(decision, FailRun):
            self._trigger(
                RunFailed,
                at,
                error=decision.reason,
                step_id=failure.step_id if failure else None,
                outcome=decision.outcome,
            )

    @staticmethod
    def _ask(flow: FlowPolicy, view: RunView) -> Decision:
        try:
            return flow.decide(view)
        except Exception as exc:  # a flow's bug ends the run, recorded, not the process
            return FailRun(f"flow '{flow.name}' could not decide: {type(exc).__name__}: {exc}")

    def _bounded(self, decision: Decision, view: RunView) -> Decision:
        """A step chosen once too often fails the run instead (every loop has a limit)."""
        if not isinstance(decision, RunStep):
            return decision
        if not 0 <= decision.index < len(view.recipe.steps):
            return FailRun(f"the flow chose step {decision.index}, which the recipe lacks")
        step_id = view.recipe.steps[decision.index].step_id
        limit = instances_limit(view.recipe)
        started = self.times_started.get(step_id, 0)
        if started >= limit:
            return FailRun(
                f"the flow chose step '{step_id}' again after {started} runs of it; "
                f"the limit is {limit} (flow option max_instances_per_step)",
            )
        return decision

    def _record_decision(
        self, at: datetime, flow: FlowPolicy, view: RunView, decision: Decision
    ) -> None:
        assert self.recipe is not None
        failure = view.failure
        after = (
            failure.instance_id
            if failure
            else (self.history[-1].instance_id if self.history else None)
        )
        loop = dict(decision.loop) if decision.loop else None
        candidates = (
            list(loop["candidates"])
            if loop and "candidates" in loop
            else [s.step_id for s in self.recipe.steps]
        )
        fields: dict[str, Any] = {
            "flow": "ladder" if decision.rung else flow.name,
            "after_instance": after,
            "failure_kind": failure.kind if failure else None,
            "candidates": candidates,
            "reason": decision.reason,
            "context_sha256": view.fingerprint(),
            "rung": dict(decision.rung) if decision.rung else None,
            "loop": loop,
        }
        if isinstance(decision, RunStep):
            step_id = self.recipe.steps[decision.index].step_id
            fields |= {
                "choice": step_id,
                "instance_id": instance_id(step_id, self.times_started.get(step_id, 0)),
                "overrides": decision.overrides.as_json(),
            }
        elif isinstance(decision, FailRun):
            fields |= {"choice": "fail", "outcome": decision.outcome}
        else:
            fields |= {"choice": "done"}
        self._trigger(FlowDecided, at, **fields)

    def _start_step(self, at: datetime, index: int) -> None:
        assert self.recipe is not None
        step = self.recipe.steps[index]
        self._trigger(
            StepStarted,
            at,
            step_index=index,
            step_id=step.step_id,
            instance_id=instance_id(step.step_id, self.times_started.get(step.step_id, 0)),
            kind=step.kind,
            phase=self.recipe.phase_of(index),
            tool=step.tool if isinstance(step, ToolStep) else None,
            agent_archetype=step.agent_archetype if isinstance(step, AgentStep) else None,
            output_slot=step.output_slot,
        )

    # -- evolution --------------------------------------------------------------------------

    def apply(self, event: DomainEvent) -> None:
        spent = spend_of(event)
        if spent is not NOTHING:
            self.spent = self.spent + spent
        handler = _APPLIERS.get(type(event))
        if handler is not None:
            handler(self, event)
        elif isinstance(event, JournalRecord):
            self.journal.setdefault(event.instance_id, []).append(event)
            if isinstance(event, TriageDecided):
                self.triage_verdicts.append(event.decision)

    def _on_decided(self, e: FlowDecided) -> None:
        self.decisions.append(
            PastDecision(e.after_instance, e.choice, e.instance_id, e.reason, e.rung, e.loop)
        )
        if e.instance_id is not None and e.overrides:
            self.overrides[e.instance_id] = Overrides.from_json(e.overrides)
        if e.choice == "done":
            self.current = None  # the steps are done, even after one that failed

    def _on_started(self, e: RunStarted) -> None:
        self.status = RunStatus.RUNNING
        self.recipe = Recipe.model_validate(e.recipe)
        self.task = e.task
        self.session_id = e.session_id
        self.trace_id = e.trace_id
        self.total_steps = e.total_steps
        self.origin = e.origin or UNKNOWN_USER
        self.ladders = {step: Ladder.model_validate(data) for step, data in e.ladders.items()}
        self.workspace = e.workspace
        self.models = dict(e.models)

    def _on_forked(self, e: RunForked) -> None:
        self.fork = e

    def _on_claimed(self, e: RunClaimed) -> None:
        self.owner = e.owner
        self.lease_expires_at = e.lease_expires_at

    def _on_released(self, e: RunReleased) -> None:
        self.owner = ""
        self.lease_expires_at = None

    def _on_step_started(self, e: StepStarted) -> None:
        step = self.recipe_steps[e.step_index]
        instance = e.instance_id or e.step_id
        self.current = StepInstance(
            e.step_index, instance, step, self.overrides.get(instance, NO_OVERRIDES)
        )
        self.waiting_on = None
        self.times_started[e.step_id] = self.times_started.get(e.step_id, 0) + 1
        self.current_step_index = e.step_index
        self.phase = e.phase

    def _on_step_waiting(self, e: StepWaiting) -> None:
        self.waiting_on = e.instance_id
        self.waits.append(dict(e.awaiting))

    def _on_receipt(self, e: ReceiptIssued) -> None:
        self.receipt_outputs[e.receipt_id] = e.output

    def _on_slot(self, e: SlotWritten) -> None:
        if e.kind == "pointer":
            assert e.receipt_id is not None
            self.slot_values[e.slot] = self.receipt_outputs[e.receipt_id]
            self.slot_texts[e.slot] = e.summary
        else:
            self.slot_values[e.slot] = slot_value_of_text(e.text or "")
            self.slot_texts[e.slot] = e.text or ""
            self.artifact_slots.add(e.slot)

    def _on_file_written(self, e: FileWritten) -> None:
        self.files_written[e.path] = e

    def _on_step_completed(self, e: StepCompleted) -> None:
        self.history.append(
            Performed(e.step_index, e.step_id, e.instance_id or e.step_id, e.output_hash or "")
        )
        self.current = None
        self.waiting_on = None

    def _on_request(self, e: ModelRequestRecorded) -> None:
        self.request_refs.add(e.ref)

    def _on_step_failed(self, e: StepFailed) -> None:
        self.failed_step_index = e.step_index

    def _on_retried(self, e: RunRetried) -> None:
        self.status = RunStatus.RUNNING
        if e.models:
            self.models = dict(e.models)
        self.outcome = None
        self.error = None
        self.dod_results = None
        self.failed_step_index = None
        # A retry is a new decision: whoever held the failed run holds it no more.
        self.owner = ""
        self.lease_expires_at = None
        # The flow picks up after the last step before the one retried.
        self.history = [p for p in self.history if p.index < e.step_index]

    def _on_dod(self, e: DodChecked) -> None:
        self.dod_results = list(e.results)

    def _on_completed(self, e: RunCompleted) -> None:
        self._finish(RunStatus.DONE, None)
        self.outcome = e.outcome if e.outcome is not None else 0

    def _on_failed(self, e: RunFailed) -> None:
        self._finish(RunStatus.FAILED, e.error)
        self.outcome = e.outcome if e.outcome is not None else 1

    def _on_answered(self, e: HumanAnswered) -> None:
        self.current = None
        self.waiting_on = None

    def _on_cancelled(self, e: RunCancelled) -> None:
        self._finish(RunStatus.CANCELLED, f"cancelled: {e.reason}")
        self.outcome = 20  # INTERRUPTED

    def _finish(self, status: RunStatus, error: str | None) -> None:
        self.status = status
        self.error = error
        self.phase = None
        self.current = None
        self.waiting_on = None


_APPLIERS: dict[type[DomainEvent], Any] = {
    RunStarted: Run._on_started,
    RunForked: Run._on_forked,
    FlowDecided: Run._on_decided,
    RunClaimed: Run._on_claimed,
    RunReleased: Run._on_released,
    StepStarted: Run._on_step_started,
    StepWaiting: Run._on_step_waiting,
    ReceiptIssued: Run._on_receipt,
    SlotWritten: Run._on_slot,
    FileWritten: Run._on_file_written,
    StepCompleted: Run._on_step_completed,
    DodChecked: Run._on_dod,
    ModelRequestRecorded: Run._on_request,
    StepFailed: Run._on_step_failed,
    RunRetried: Run._on_retried,
    RunCompleted: Run._on_completed,
    RunFailed: Run._on_failed,
    RunCancelled: Run._on_cancelled,
    HumanAnswered: Run._on_answered,
}
