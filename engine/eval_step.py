"""The `eval_forks` step's performer (`domain/eval_step.py`): fork each source run at the
first step the change touches, run the forks, compare each with its source.

Each fork runs in a scratch copy of the workspace as its source found it
(`.control-room/evals/EVAL/FORK/`, removed once the fork has ended): an eval never writes
the manuscript, and a fork of a drafting run does not collide with the scene its source
wrote. Its events go to the workspace's own store, so it is a run like any other
(`show`, `diff`, analytics). A fork is named in `EvalForkStarted` before its first event
is written, so a resumed eval goes on with it, and a fork that has `EvalForkEnded` is never
run again.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import ControlRoomError
from controlroom.domain.eval_step import (
    MAX_AT_ONCE,
    MAX_SOURCES,
    EvalForkEnded,
    EvalForkSkipped,
    EvalForksStep,
    EvalForkStarted,
)
from controlroom.domain.outcomes import ArtifactOutcome
from controlroom.domain.recipe import Recipe
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.run_events import RunOrigin, RunStarted, StepStarted
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.eval_report import render_report
from controlroom.eventstore.config import state_dir

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


def touched_step(
    recipe: Recipe, started: Sequence[str], prompt_types: set[str], roles: set[str]
) -> str | None:
    """The first step of the recipe the change reaches (an agent step of a changed prompt
    type or role, a step kind whose own agents include a changed role) that the source
    run started; None when the change does not touch the run."""
    for step in recipe.steps:
        touched = False
        if isinstance(step, AgentStep):
            touched = step.prompt_type in prompt_types or step.agent_archetype in roles
        if hasattr(step, "roles"):
            touched = touched or bool(set(step.roles()) & roles)
        for role in ("verifier", "fixer"):
            agent = getattr(step, role, None)
            if agent is not None and getattr(agent, "prompt_type", None) in prompt_types:
                touched = True
        if touched:
            return step.step_id if step.step_id in started else None
    return None


def _args(run: Run) -> tuple[list[str], dict[str, str], dict[str, str], int]:
    args = run.task.args
    sources = [str(s) for s in args.get("sources") or []][:MAX_SOURCES]
    texts = args.get("prompt_texts") or {}
    models = args.get("models") or {}
    at_once = args.get("at_once", 2)
    at_once = at_once if isinstance(at_once, int) and not isinstance(at_once, bool) else 2
    return (
        sources,
        {str(k): str(v) for k, v in texts.items()} if isinstance(texts, Mapping) else {},
        {str(k): str(v) for k, v in models.items()} if isinstance(models, Mapping) else {},
        max(1, min(MAX_AT_ONCE, at_once)),
    )


async def perform_eval_forks(execution: Execution, instance: StepInstance) -> ArtifactOutcome:
    from controlroom.engine.fork import ForkRequest

    step = instance.step
    assert isinstance(step, EvalForksStep)
    ctx, run = execution.ctx, execution.run
    sources, texts, models, at_once = _args(run)
    request = {"prompt_texts": texts, "models": models}
    gate = asyncio.Semaphore(at_once)
    key = instance.instance_id

    def done(source: str) -> bool:
        ended = any(r.source_run_id == source for r in run.journal_of(key, EvalForkEnded))
        return ended or any(r.source_run_id == source for r in run.journal_of(key, EvalForkSkipped))

    async def one(source: str) -> None:
        if done(source):
            return
        async with gate:
            begun = [r for r in run.journal_of(key, EvalForkStarted) if r.source_run_id == source]
            if begun:
                fork_id, from_step = begun[-1].fork_run_id, begun[-1].from_step
            else:
                events = ctx.store.stream(source)
                why, where = _where(events, set(texts), set(models))
                if where is None:
                    execution.journal([_skipped(step, key, source, why)])
                    return
                from_step = where
                fork_id = ctx.ids.new("run")
                fields = {"source_run_id": source, "fork_run_id": fork_id,
                          "from_step": from_step}  # fmt: skip
                execution.journal([(EvalForkStarted, _on(step, key, fields))])
            fork_request = ForkRequest(
                source, from_step, models=models, prompt_texts=texts
            )  # fmt: skip
            try:
                ended = await _run_fork(ctx, run, key, fork_request, fork_id)
            except ControlRoomError as exc:
                execution.journal([_skipped(step, key, source, f"{type(exc).__name__}: {exc}")])
                return
            execution.journal([(EvalForkEnded, _on(step, key, ended))])

    await asyncio.gather(*(one(source) for source in sources))
    report = render_report(
        run.id,
        request,
        run.journal_of(key, EvalForkEnded),
        run.journal_of(key, EvalForkSkipped),
    )
    return ArtifactOutcome(report, sha256_text(report), [], "eval")


def _on(step: EvalForksStep, instance: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"step_id": step.step_id, "instance_id": instance, **fields}


def _skipped(
    step: EvalForksStep, instance: str, source: str, reason: str
) -> tuple[type[EvalForkSkipped], dict[str, Any]]:
    return EvalForkSkipped, _on(step, instance, {"source_run_id": source, "reason": reason})


def _where(events: list[Any], prompt_types: set[str], roles: set[str]) -> tuple[str, str | None]:
    """Where to fork a source run (a step id), or why it is left out."""
    if not events or not isinstance(events[0], RunStarted):
        return "no such run", None
    recipe = Recipe.model_validate(events[0].recipe)
    if recipe.recipe_id == "eval":
        return "an eval is not evaluated", None
    started = [e.step_id for e in events if isinstance(e, StepStarted)]
    touched = touched_step(recipe, started, prompt_types, roles)
    if touched is None:
        return "the change touches no step this run started", None
    return "", touched


async def _run_fork(
    ctx: Context, eval_run: Run, instance: str, request: Any, fork_id: str
) -> dict[str, Any]:
    from controlroom.engine.fork import begin_fork
    from controlroom.engine.replay_test import scratch_copy
    from controlroom.engine.runner import StepRunner

    scratch = state_dir(ctx.workspace.root) / "evals" / eval_run.id / fork_id
    fork = ctx.store.load(Run, fork_id)
    if fork is None:
        if scratch.exists():  # a copy made before a kill, the fork never recorded
            shutil.rmtree(scratch)
        scratch_copy(ctx.workspace.root, scratch, ctx.store.stream(request.source_run_id))
    fork_ctx = Context.open(
        scratch, store=ctx.store, agents=ctx.agents, settings=ctx.settings, ids=ctx.ids
    )  # the workspace's store: never closed here
    if fork is None:
        origin = RunOrigin(
            kind="fork",
            via="eval",
            parent_run_id=eval_run.id,
            parent_instance_id=instance,
            root_run_id=eval_run.origin.root_run_id or eval_run.id,
            depth=eval_run.origin.depth + 1,
        )
        fork = begin_fork(fork_ctx, request, run_id=fork_id, origin=origin)
        StepRunner(fork_ctx).save(fork)
    if not fork.is_finished:
        fork = await StepRunner(fork_ctx).execute(fork)
    compared = compare(ctx, request.source_run_id, fork)
    _remove(scratch)
    return {**compared, "from_step": request.from_step}


def _remove(scratch: Path) -> None:
    """The fork's scratch copy, and the eval's and the evals' folders once empty."""
    shutil.rmtree(scratch, ignore_errors=True)
    for folder in (scratch.parent, scratch.parent.parent):
        if folder.exists() and not any(folder.iterdir()):
            folder.rmdir()


def compare(ctx: Context, source_id: str, fork: Run) -> dict[str, Any]:
    """The fork against its source, from both runs' events (`controlroom diff`)."""
    from controlroom.engine.run_diff import diff_runs
    from controlroom.engine.service import RunService

    diff = diff_runs(RunService(ctx), source_id, fork.id)
    source = ctx.store.load(Run, source_id)
    changed = [s for s in diff.steps if s.changed]
    verdicts = {
        s.step: [s.a.verdicts if s.a else None, s.b.verdicts if s.b else None]
        for s in changed
        if (s.a.verdicts if s.a else None) != (s.b.verdicts if s.b else None)
    }
    a, b = diff.totals_a, diff.totals_b
    return {
        "source_run_id": source_id,
        "fork_run_id": fork.id,
        "status_before": str(source.status) if source else "unknown",
        "status_after": str(fork.status),
        "dod_before": {str(k): v for k, v in diff.dod_a.items()},
        "dod_after": {str(k): v for k, v in diff.dod_b.items()},
        "verdicts_changed": verdicts,
        "changed_steps": [s.step for s in changed],
        "output_diff_lines": {s.step: len(s.output_diff.splitlines()) for s in changed},
        "cost_before_usd": a["cost_usd"],
        "cost_after_usd": b["cost_usd"],
        "tokens_before": a["input_tokens"] + a["output_tokens"],
        "tokens_after": b["input_tokens"] + b["output_tokens"],
        "latency_before_ms": a["latency_ms"],
        "latency_after_ms": b["latency_ms"],
    }
