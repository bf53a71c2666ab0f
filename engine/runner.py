"""The StepRunner: follows a recipe mechanically, one durable commit per step.

Guarantees (seed 000): phase A then phase B in order, each step's output cached before
the next runs; receipts for every tool call linked to the session; prompts built only
from the template and the step's slots; a failed agent halts the pipeline with no
automatic retry; the DoD is evaluated after the last step. A crash at any instant loses at
most the step in flight, which resume redoes. Issues for failed DoD checks are opened by
a tracked policy reacting to `DodChecked` (engine/policies.py), not here.

The loop knows no step kind: it asks the run for the next step instance, hands it to the
performer registered for its kind, and gives the run the outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from controlroom.domain.dod import evaluate_dod
from controlroom.domain.errors import (
    AgentOutputInvalidError,
    ControlRoomError,
    DepthExceededError,
    GateFailedError,
    ModelCallError,
    NeedsRefinementError,
    PayloadTooLargeError,
    RunConflictError,
    RunTimedOutError,
    StepCrashedError,
    StepDeferredError,
    StoreUnavailableError,
    TreeBudgetExceededError,
    TriageBlockedError,
    WorkspaceError,
)
from controlroom.domain.flow import FailureKind
from controlroom.domain.outcomes import AttemptReport, EventSpec, StepOutcome, Waiting
from controlroom.domain.run import Run, RunStatus, StepInstance
from controlroom.engine import phase_a_order
from controlroom.engine.context import Context
from controlroom.engine.hooks import PartialHook, ignore_partial
from controlroom.engine.performers import PERFORMERS, Execution, Performer, Performers
from controlroom.engine.phase_a_order import PhaseATurn
from controlroom.engine.tree_budget import guarding
from controlroom.eventstore.store import IntegrityError

#: Failures that end the run with seed 004's code of their own, whatever its flow or ladder.
CARRIES_OUTCOME = (
    DepthExceededError,
    RunTimedOutError,
    TreeBudgetExceededError,
    NeedsRefinementError,
)


def failure_kind(error: ControlRoomError) -> FailureKind:
    """What kind of failure a step's error is, for its flow to decide on."""
    if isinstance(error, StepDeferredError):
        return "deferred"
    if isinstance(error, TriageBlockedError):
        return "blocked"
    if isinstance(error, AgentOutputInvalidError):
        return "contract"  # STOP_HOOK: no valid reply after the contract's re-asks
    if isinstance(error, ModelCallError):
        return "transport"  # the model server kept failing, or refused the request
    if isinstance(error, GateFailedError):
        return "gate"  # a review gate's FAIL: its message is the findings
    if isinstance(error, DepthExceededError):
        return "depth"
    if isinstance(error, RunTimedOutError):
        return "timeout"
    if isinstance(error, TreeBudgetExceededError):
        return "budget"
    if isinstance(error, NeedsRefinementError):
        return "refinement"
    return "performer"


class StepRunner:
    def __init__(
        self,
        ctx: Context,
        on_partial: PartialHook | None = None,
        *,
        offload: bool = False,
        performers: Performers = PERFORMERS,
        owner: str | None = None,
        phase_a: PhaseATurn | None = None,
    ) -> None:
        self.ctx = ctx
        self.on_partial = on_partial or ignore_partial
        #: The claim this runner holds; renewed with step commits and by a heartbeat while
        #: a long step runs, so another worker takes the run over only if this one is gone.
        self.owner = owner
        self.lease_s = ctx.settings.lease_s
        # The heartbeat and the step loop both change the run: one at a time.
        self._lock = asyncio.Lock()
        #: In the server and workers, commits go through the store's group committer (one
        #: writer thread, several runs per transaction) so the event loop keeps serving.
        self.offload = offload
        self.performers = performers
        #: The run's place among the process's runs for phase A (`engine/phase_a_order.py`).
        self.phase_a = phase_a

    def save(self, run: Run) -> None:
        """Commit the run's pending events; another writer's commit first is a conflict."""
        try:
            self.ctx.store.save(run)
        except IntegrityError:
            raise RunConflictError(run.id) from None

    async def commit(self, run: Run) -> None:
        """`save` from the event loop: through the group commit when offloading."""
        if not self.offload:
            self.save(run)
            return
        try:
            await self.ctx.store.save_soon(run)
        except IntegrityError:
            raise RunConflictError(run.id) from None

    async def execute(self, run: Run) -> Run:
        """Advance the run until it finishes or waits. Returns the run as it then is."""
        from controlroom.engine.fork import recorded_fork

        heartbeat = asyncio.create_task(self._heartbeat(run)) if self.owner else None
        ctx = self.ctx
        try:
            # A fork's steps run with the templates and models its record names, whichever
            # process executes it (the fork command, a later resume, a worker).
            with recorded_fork(ctx, run) as self.ctx:
                return await self._execute(run)
        finally:
            self.ctx = ctx
            if heartbeat is not None:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError, RunConflictError):
                    await heartbeat

    async def _heartbeat(self, run: Run) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            async with self._lock:
                if run.is_finished or self.owner is None:
                    return
                run.renew_lease(self.ctx.clock.now(), self.owner, self.lease_s)
                if run.pending_count:
                    await self.commit(run)

    async def _commit_step(self, run: Run) -> None:
        async with self._lock:
            if self.owner is not None:
                run.renew_lease(self.ctx.clock.now(), self.owner, self.lease_s)
            await self.commit(run)

    async def _execute(self, run: Run) -> Run:
        assert run.recipe is not None
        execution = Execution(
            ctx=self.ctx,
            run=run,
            workspace=self.ctx.workspace.snapshot(),
            # A role that cannot be served fails here, before any step runs.
            profiles=self.ctx.agents.check(run.recipe.agent_archetypes()),
            record_attempt=self._attempt_recorder(run),
            on_partial=self.on_partial,
        )
        execution.journal = lambda records: self._journal(execution.run, records)
        try:
            with guarding(self.ctx.store, run):
                return await self._steps(run, execution)
        finally:
            if self.phase_a is not None:
                self.phase_a.give_up()

    async def _steps(self, run: Run, execution: Execution) -> Run:
        assert run.recipe is not None
        while not run.is_finished:
            current = run.next_step()
            if current is None:
                if run.is_waiting:
                    break  # a policy delivers what it waits for; then it runs on
                self._check_dod(run)
                await self._commit_step(run)
                break
            if self.phase_a is not None:
                if run.recipe.phase_of(current.index) == "a":
                    await self.phase_a.take()
                else:
                    self.phase_a.give_up()
            try:
                performer = self.performers.for_instance(current)
                result = await self._perform(performer, execution, current)
                if isinstance(result, Waiting):
                    run.wait(self.ctx.clock.now(), result)
                else:
                    run.complete_step(self.ctx.clock.now(), result)
                    if run.steps_done:
                        self._check_dod(run)  # same commit as the last step
                await self._commit_step(run)
            except RunConflictError:
                return self._after_conflict(run)
            except StoreUnavailableError:
                # Not the step's fault: nothing was recorded, the run stays resumable.
                raise
            except PayloadTooLargeError as exc:
                run = self._reload(run)
                execution.run = run
                run.fail_step(self.ctx.clock.now(), type(exc).__name__, str(exc))
                await self._commit_step(run)
            except ControlRoomError as exc:
                # The run's flow decides what follows; linear flow halts and reports, and
                # the user decides (guarantee 6).
                run.fail_step(
                    self.ctx.clock.now(),
                    type(exc).__name__,
                    str(exc),
                    failure_kind(exc),
                    outcome=exc.outcome if isinstance(exc, CARRIES_OUTCOME) else None,
                )
                await self._commit_step(run)
        return run

    async def _perform(
        self, performer: Performer, execution: Execution, current: StepInstance
    ) -> StepOutcome | Waiting:
        """The step's work. A phase A step that runs long (a tool crunching a manuscript)
        lets the next run through meanwhile: the order is for short work, not a queue
        behind one slow run."""
        deadline = execution.run.origin.deadline
        try:
            if deadline is None:
                return await self._perform_in_turn(performer, execution, current)
            left = (deadline - self.ctx.clock.now()).total_seconds()
            if left <= 0:
                raise RunTimedOutError(current.step.step_id, deadline)
            try:
                async with asyncio.timeout(left):
                    return await self._perform_in_turn(performer, execution, current)
            except TimeoutError:
                raise RunTimedOutError(current.step.step_id, deadline) from None
        except ControlRoomError:
            raise
        except Exception as exc:
            # Not a kind of failure the performer names, but still the step's: recorded as
            # its failure, so the run ends instead of staying `running` (and `resume`
            # meeting the same exception again).
            raise StepCrashedError(current.instance_id, exc) from exc

    async def _perform_in_turn(
        self, performer: Performer, execution: Execution, current: StepInstance
    ) -> StepOutcome | Waiting:
        turn = self.phase_a
        if turn is None or not turn.held:
            return await performer(execution, current)
        work = asyncio.ensure_future(performer(execution, current))
        try:
            await asyncio.wait({work}, timeout=phase_a_order.LONG_PHASE_A_STEP_S)
        except asyncio.CancelledError:
            work.cancel()
            raise
        if not work.done():
            turn.give_up()  # taken again, by its rank, for the run's next phase A step
        return await work

    def _journal(self, run: Run, records: list[EventSpec]) -> None:
        """A step's records while it runs: recorded in its journal and committed now, so
        a crash after this point never repeats what they record."""
        run.record_within_step(self.ctx.clock.now(), records)
        self.save(run)

    def _attempt_recorder(self, run: Run) -> Callable[[AttemptReport], None]:
        def record(failure: AttemptReport) -> None:
            # A rare path: a failed attempt is committed at once, so it is never lost.
            run.record_model_attempt(self.ctx.clock.now(), failure)
            self.save(run)

        return record

    def _check_dod(self, run: Run) -> None:
        assert run.recipe is not None

        def file_exists(path: str) -> bool:
            try:
                return self.ctx.workspace.exists(path)
            except WorkspaceError:
                return False

        results = evaluate_dod(run.recipe.dod, run.slot_values, run.task_context(), file_exists)
        run.record_dod(self.ctx.clock.now(), results)

    def _reload(self, run: Run) -> Run:
        fresh = self.ctx.store.load(Run, run.id)
        assert fresh is not None
        return fresh

    def _after_conflict(self, run: Run) -> Run:
        fresh = self._reload(run)
        if fresh.status == RunStatus.CANCELLED:
            return fresh  # cancelled by someone else: stop here, nothing to record
        raise RunConflictError(run.id)
