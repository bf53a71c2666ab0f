"""The StepRunner: follows a recipe mechanically, one durable commit per step.

Guarantees (seed 000): phase A then phase B in order, each step's output cached before
the next runs; receipts for every tool call linked to the session; prompts built only
from the template and the step's slots; a failed agent halts the pipeline with no
automatic retry; the DoD is evaluated after the last step and every failure opens an
issue. A crash at any instant loses at most the step in flight, which resume redoes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controlroom.domain.dod import evaluate_dod, failure_title
from controlroom.domain.errors import (
    ControlRoomError,
    PayloadTooLargeError,
    RunConflictError,
    WorkspaceError,
)
from controlroom.domain.issue import Issue, dod_issue_id
from controlroom.domain.recipe import ToolStep
from controlroom.domain.run import AttemptFailure, Run, RunStatus
from controlroom.engine.context import Context
from controlroom.engine.steps import run_agent, run_tool
from controlroom.eventstore.store import IntegrityError, Positioned

Observer = Callable[[Sequence[Positioned]], None]
#: Receives (run_id, step_id, text) as a streaming model generates; never stored.
PartialSink = Callable[[str, str, str], None]


def _ignore(_: Sequence[Positioned]) -> None:
    return None


class StepRunner:
    def __init__(
        self,
        ctx: Context,
        observer: Observer | None = None,
        on_partial: PartialSink | None = None,
    ) -> None:
        self.ctx = ctx
        self.observer = observer or _ignore
        self.on_partial = on_partial

    def save(self, run: Run) -> None:
        """Commit the run's pending events; another writer's commit first is a conflict."""
        try:
            recordings = self.ctx.store.commit(run)
        except IntegrityError:
            raise RunConflictError(run.id) from None
        self.observer(
            [
                Positioned(r.notification.id, r.domain_event)  # type: ignore[arg-type]
                for r in recordings
            ]
        )

    async def execute(self, run: Run) -> Run:
        """Advance the run until it finishes. Returns the run in its final state."""
        # Every step of this execution reads the same snapshot of the workspace files.
        workspace = self.ctx.workspace.snapshot()
        # Resolved once per execution: every agent call names its model explicitly, and a
        # role that cannot be served fails here, before any step runs.
        assert run.recipe is not None
        profiles = self.ctx.agents.check(s.agent_archetype for s in run.recipe.phase_b)
        while not run.is_finished:
            current = run.next_step()
            if current is None:
                self._check_dod(run)
                self.save(run)
                break
            _, step = current
            try:
                if isinstance(step, ToolStep):
                    tool_outcome = run_tool(self.ctx, workspace, run, step)
                    run.complete_tool_step(self.ctx.clock.now(), tool_outcome)
                else:
                    outcome = await run_agent(
                        self.ctx,
                        run,
                        step,
                        profiles[step.agent_archetype],
                        self._attempt_recorder(run),
                        self._partial_sink(run),
                    )
                    run.complete_agent_step(self.ctx.clock.now(), outcome)
                if run.next_step() is None:
                    self._check_dod(run)  # same commit as the last step
                self.save(run)
            except RunConflictError:
                return self._after_conflict(run)
            except PayloadTooLargeError as exc:
                run = self._reload(run)
                run.fail_step(self.ctx.clock.now(), type(exc).__name__, str(exc))
                self.save(run)
            except ControlRoomError as exc:
                # Guarantee 6: the pipeline halts and reports; the user decides what next.
                run.fail_step(self.ctx.clock.now(), type(exc).__name__, str(exc))
                self.save(run)
        self.open_issues(run)
        return run

    def _attempt_recorder(self, run: Run) -> Callable[[AttemptFailure], None]:
        def record(failure: AttemptFailure) -> None:
            # A rare path: a failed attempt is committed at once, so it is never lost.
            run.record_model_attempt(self.ctx.clock.now(), failure)
            self.save(run)

        return record

    def _partial_sink(self, run: Run) -> Callable[[str, str], None] | None:
        if self.on_partial is None:
            return None
        sink = self.on_partial
        return lambda step_id, text: sink(run.id, step_id, text)

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

    def open_issues(self, run: Run) -> list[str]:
        """Open one issue per failed DoD check. Idempotent: issue ids are deterministic."""
        if run.dod_results is None or run.recipe is None:
            return []
        opened = []
        for result in run.dod_results:
            if result.passed:
                continue
            issue_id = dod_issue_id(run.id, result.index)
            if self.ctx.store.load(Issue, issue_id) is not None:
                continue
            issue = Issue.open(
                issue_id,
                self.ctx.clock.now(),
                kind="dod_failure",
                title=failure_title(run.recipe.recipe_id, result),
                detail=result.detail,
                run_id=run.id,
                session_id=run.session_id,
                recipe_id=run.recipe.recipe_id,
                check=result.check,
                evidence=result.evidence,
            )
            try:
                self.ctx.store.commit(issue)
            except IntegrityError:
                continue  # opened concurrently by another process
            opened.append(issue_id)
        return opened
