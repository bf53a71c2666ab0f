"""Commands users give: start a run (by recipe id or routed description), resume, cancel."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from controlroom.domain import router_examples
from controlroom.domain.errors import (
    BadInputError,
    ClaimLostError,
    MissingArgsError,
    NotRoutableError,
    RunConflictError,
    RunNotFoundError,
    UnknownRecipeError,
)
from controlroom.domain.recipe import Recipe
from controlroom.domain.router import route
from controlroom.domain.run import Run
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    ModelAttemptFailed,
    ModelRequestRecorded,
    RoutingDecision,
    RunOrigin,
    TaskSpec,
)
from controlroom.domain.texts import join_body, referred_texts
from controlroom.engine.capability_check import check_capabilities
from controlroom.engine.context import Context
from controlroom.engine.hooks import PartialHook
from controlroom.engine.ladders import resolve_ladders
from controlroom.engine.phase_a_order import PhaseATurn
from controlroom.engine.ports import owner_is_gone
from controlroom.engine.runner import StepRunner
from controlroom.eventstore.store import IntegrityError

CANCEL_ATTEMPTS = 20


def _looks_like_recipe_id(text: str) -> bool:
    """`analytical_consistencyy` is a mistyped id, not a task for the Chief to scope."""
    return re.fullmatch(r"[a-z0-9]+(?:[_\-][a-z0-9]+)+", text.strip()) is not None


@dataclass(frozen=True)
class RunRequest:
    """A recipe id, or a task description for the router, plus args."""

    task_or_recipe: str
    args: Mapping[str, JsonValue]
    session_id: str | None = None
    session_plan_task_id: int | None = None
    description: str | None = None
    #: True when `task_or_recipe` must be a recipe id (never routed), as in POST /api/runs.
    is_recipe_id: bool = False
    #: Who asks: recorded on `RunStarted` (a user through the CLI unless said otherwise).
    origin: RunOrigin = field(default_factory=lambda: RunOrigin(kind="user", via="cli"))


class RunService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def route(self, description: str) -> RoutingDecision:
        return route(description, self.ctx.catalog.recipes())

    def routing_ready(self, request: RunRequest) -> bool:
        """False when starting `request` would first train the router's classifier (about
        two seconds, once a process): a caller on an event loop does that in a thread."""
        routed = not (request.is_recipe_id or request.task_or_recipe in self.ctx.catalog)
        return not routed or router_examples.trained(self.ctx.catalog.recipes())

    def prepare_routing(self) -> None:
        router_examples.model_for(self.ctx.catalog.recipes())

    def plan(self, request: RunRequest) -> tuple[Recipe, TaskSpec, RoutingDecision | None]:
        """Decide what would run, or raise a clear error; records nothing."""
        routing: RoutingDecision | None = None
        if request.is_recipe_id or request.task_or_recipe in self.ctx.catalog:
            recipe = self.ctx.catalog.get(request.task_or_recipe)
            description = request.description or recipe.label or recipe.recipe_id
            args: dict[str, Any] = dict(request.args)
        else:
            routing = self.route(request.task_or_recipe)
            if not routing.routable or routing.recipe_id is None:
                if _looks_like_recipe_id(request.task_or_recipe):
                    raise UnknownRecipeError(
                        request.task_or_recipe, [r.recipe_id for r in self.ctx.catalog.recipes()]
                    )
                raise NotRoutableError(request.task_or_recipe, routing.reason)
            recipe = self.ctx.catalog.get(routing.recipe_id)
            description = request.task_or_recipe
            args = {**routing.initial_args, **request.args}
        # A loop needing image or speech models this install lacks is refused here, for
        # the CLI and HTTP alike, before anything is recorded.
        check_capabilities(recipe)
        missing = recipe.required_args() - set(args)
        if missing:
            raise MissingArgsError(recipe.recipe_id, sorted(missing))
        self.ctx.agents.check(recipe.agent_archetypes())
        task = TaskSpec(
            description=description, args=args, session_plan_task_id=request.session_plan_task_id
        )
        return recipe, task, routing

    def start(self, request: RunRequest, owner: str | None = None) -> Run:
        """Record the start of a run (`begin`, then commit it)."""
        run = self.begin(request, owner)
        StepRunner(self.ctx).save(run)
        return run

    def begin(self, request: RunRequest, owner: str | None = None) -> Run:
        """The run as it would start, its first events not yet committed: the caller
        commits them (the executor through its group commit)."""
        recipe, task, routing = self.plan(request)
        ladders = resolve_ladders(self.ctx.agents, recipe)
        run = Run.start(
            run_id=self.ctx.ids.new("run"),
            at=self.ctx.clock.now(),
            recipe=recipe,
            task=task,
            routing=routing,
            session_id=request.session_id or self.ctx.ids.new("sess"),
            trace_id=self.ctx.ids.new("tr"),
            origin=request.origin,
            ladders=ladders,
            workspace=self.workspace_key,
            models=self.serving(recipe),
        )
        if owner:
            run.claim(self.ctx.clock.now(), owner, self.ctx.settings.lease_s)
        return run

    def serving(self, recipe: Recipe) -> dict[str, str]:
        """The `provider:model` serving each role of the recipe, as the settings are now
        (the roles are checked, their clients built, where the run is planned or retried)."""
        profiles = (self.ctx.agents.profile(role) for role in sorted(recipe.agent_archetypes()))
        return {p.archetype: f"{p.provider}:{p.model}" for p in profiles}

    @property
    def workspace_key(self) -> str:
        """How a run records the workspace it belongs to: its folder, resolved."""
        return str(self.ctx.workspace.root.resolve())

    def load(self, run_id: str) -> Run:
        run = self.ctx.store.load(Run, run_id)
        if run is None:
            raise RunNotFoundError(run_id)
        return run

    async def execute(
        self,
        run: Run,
        on_partial: PartialHook | None = None,
        *,
        offload: bool = False,
        phase_a: PhaseATurn | None = None,
    ) -> Run:
        """Advance a run this process has claimed (or an unclaimed one, as tests do)."""
        owner = run.owner or None
        runner = StepRunner(self.ctx, on_partial, offload=offload, owner=owner, phase_a=phase_a)
        return await runner.execute(run)

    async def resume(
        self,
        run_id: str,
        on_partial: PartialHook | None = None,
        *,
        owner: str | None = None,
        offload: bool = False,
        phase_a: PhaseATurn | None = None,
        here: bool = False,
    ) -> Run:
        """Continue an unfinished run from its events. A finished run is returned as it is
        (its issues were opened by the DoD-issue policy, or will be at the next catch-up).
        A run of another workspace sharing the store is refused unless `here` (that
        workspace moved to this folder)."""
        run = self.load(run_id)
        if run.is_finished or run.is_waiting:
            return run
        if not here:
            run.check_workspace(self.workspace_key, "resume")
        now = self.ctx.clock.now()
        # A run taken up for the first time (queued, a child its parent just started) is
        # started, not resumed: nothing was interrupted, and the counts of resumes say so.
        interrupted = bool(run.history) or bool(run.owner)
        if owner:
            # Refused while another live process holds the run (RunClaimedError).
            takeover = bool(run.owner) and owner_is_gone(run.owner)
            run.claim(now, owner, self.ctx.settings.lease_s, takeover=takeover)
        if interrupted:
            run.resume(now)
        runner = StepRunner(self.ctx, on_partial, offload=offload, owner=owner, phase_a=phase_a)
        if owner:
            # The claim is recorded before any step is performed: of two workers racing for
            # one run, the loser learns it here, not after repeating the winner's first step
            # (a model call, perhaps) only to have its commit refused.
            try:
                await runner.commit(run)
            except RunConflictError:
                raise ClaimLostError(run_id) from None
        return await runner.execute(run)

    def retry(
        self,
        run_id: str,
        from_step: str | None = None,
        owner: str | None = None,
        here: bool = False,
    ) -> Run:
        """Reopen a failed run at the failed step (or `from_step`, an earlier one) and
        record it (`RunRetried`); `execute` then continues it. The user decides: a failed
        run never continues by itself."""
        run = self.load(run_id)
        if not here:
            run.check_workspace(self.workspace_key, "retry")
        now = self.ctx.clock.now()
        # a retry takes the settings as they are now (fixed, perhaps); a resume goes on
        # with the models the run started with
        run.retry(now, from_step, self.serving(run.recipe) if run.recipe else None)
        if owner:
            takeover = bool(run.owner) and owner_is_gone(run.owner)
            run.claim(now, owner, self.ctx.settings.lease_s, takeover=takeover)
        self.ctx.agents.check(run.recipe.agent_archetypes() if run.recipe else [])
        try:
            self.ctx.store.save(run)
        except IntegrityError:
            raise RunConflictError(run_id) from None
        return run

    def recorded_request(self, run_id: str, step_or_ref: str) -> dict[str, Any]:
        """The exact request an agent step sent (its latest reply's, or the one with that
        `sha256:` ref), read from the run's own events: what the model was shown."""
        events = self.ctx.store.stream(run_id)
        if not events:
            raise RunNotFoundError(run_id)
        ref = step_or_ref if step_or_ref.startswith("sha256:") else None
        step = None
        for event in reversed(events):
            if not isinstance(event, AgentResponded | AgentReplyRejected | ModelAttemptFailed):
                continue
            if ref is not None and event.request_ref == ref:
                step = event.step_id  # asked by ref: the step whose call sent it
                break
            if ref is None and step_or_ref in (event.step_id, getattr(event, "instance_id", None)):
                ref, step = event.request_ref, event.step_id
                break
        for event in events:
            if isinstance(event, ModelRequestRecorded) and event.ref == ref:
                return {
                    "run_id": run_id,
                    "step_id": step,
                    "ref": event.ref,
                    "provider": event.provider,
                    "model": event.model,
                    "body": self.request_body(event),
                }
        raise BadInputError(
            f"run {run_id} has no recorded model request for '{step_or_ref}' "
            "(name an agent step, or a sha256: ref)"
        )

    def request_body(self, event: ModelRequestRecorded) -> dict[str, Any]:
        """The body as it was sent: the texts it refers to by hash put back."""
        return join_body(event.body, self.ctx.store.texts(referred_texts(event.body)))

    def release(self, run_id: str, owner: str) -> None:
        """Let a claimed run go (a worker shutting down); refused silently if not ours."""
        run = self.load(run_id)
        run.release(self.ctx.clock.now(), owner)
        with contextlib.suppress(IntegrityError):
            self.ctx.store.save(run)

    def cancel(self, run_id: str, reason: str = "cancelled by user") -> Run:
        """Record the cancellation; a runner advancing the run meanwhile is retried around.

        The running process sees the cancellation at its next commit (its version is
        taken) and stops there.
        """
        for _ in range(CANCEL_ATTEMPTS):
            run = self.load(run_id)
            run.cancel(self.ctx.clock.now(), reason)
            try:
                self.ctx.store.save(run)
            except IntegrityError:
                continue
            return run
        raise RunConflictError(run_id)
