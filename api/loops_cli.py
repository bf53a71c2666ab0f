"""`controlroom loops`: the loop registry and the next loop proposed after a loop run.

Usage and exit codes: api/loops_args.py (what `--help` prints)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from controlroom.api.cli_common import EXIT_DONE, emit_json, open_context, warn_about_recipes
from controlroom.domain.errors import BadInputError
from controlroom.domain.loop_listing import LoopsListing, NextLoop, listing, next_loop
from controlroom.engine.context import Context
from controlroom.recipes.catalog import RecipeCatalog


def run_loops_command(ns: argparse.Namespace) -> int:
    if ns.action is None:
        if ns.run_id or ns.accept:
            raise BadInputError("a RUN_ID and --accept go with `controlroom loops next`")
        return _list(ns)
    if not ns.run_id:
        raise BadInputError("loops next needs the RUN_ID of a loop run that has ended")
    return _next(ns)


def _list(ns: argparse.Namespace) -> int:
    found = listing(_catalog(ns).recipes(), os.environ)
    if ns.json:
        emit_json(found.model_dump(mode="json"))
    else:
        print_listing(found)
    return EXIT_DONE


def _catalog(ns: argparse.Namespace) -> RecipeCatalog:
    """The workspace's recipes (bundled, and its overrides) without opening its store:
    listing the registry records nothing."""
    from controlroom.prompts.registry import PromptRegistry
    from controlroom.tools.base import ToolRegistry
    from controlroom.tools.workspace import Workspace

    root = Workspace(Path(ns.workspace)).root
    prompts = PromptRegistry.for_workspace(root)
    catalog = RecipeCatalog.load(root, ToolRegistry.default().names(), prompts.prompt_types())
    warn_about_recipes(catalog)
    return catalog


def print_listing(found: LoopsListing) -> None:
    if not found.loops:
        print("no loops: no recipe of this workspace declares a `loop`")
    for loop in found.loops:
        print(f"{loop.name}  (recipe {loop.recipe_id})")
        print(f"  purpose: {loop.purpose}")
        print(f"  inputs: {', '.join(loop.typical_inputs) or '-'}")
        print(f"  outputs: {', '.join(loop.typical_outputs) or '-'}")
        print(f"  scope: {loop.scope}")
        print(f"  often follows: {', '.join(loop.often_follows) or '-'}")
        print(f"  often precedes: {', '.join(loop.often_precedes) or '-'}")
        if loop.needs:
            state = "available" if loop.available else f"missing {', '.join(loop.missing)}"
            print(f"  needs: {', '.join(loop.needs)} ({state}; CONTROLROOM_CAPABILITIES)")
        else:
            print("  needs: nothing beyond text models")
    print(size_line(found))


def size_line(found: LoopsListing) -> str:
    ratio = found.tier1_tokens / found.full_tokens if found.full_tokens else 0.0
    return (
        f"tier 1: ~{found.tier1_tokens} tokens for {len(found.loops)} loop(s), against "
        f"~{found.full_tokens} for their full definitions ({ratio:.1%})"
    )


def _next(ns: argparse.Namespace) -> int:
    from controlroom.engine.service import RunService

    ctx = open_context(ns)
    try:
        run = RunService(ctx).load(ns.run_id)
        proposed = next_loop(run, ctx.catalog.recipes(), os.environ)
        accepted = _accept(ctx, ns.accept, proposed) if ns.accept else None
    finally:
        ctx.close()
    if ns.json:
        emit_json({**proposed.model_dump(mode="json"), "accepted": accepted})
    else:
        print("\n".join(next_loop_lines(proposed)))
        if accepted:
            print(accepted)
    return EXIT_DONE


def next_loop_lines(proposed: NextLoop) -> list[str]:
    """What `loops next` and `show` say of a loop run that has ended."""
    found = proposed.proposal
    if found is None:
        return [str(proposed.note)]
    return [
        f"next loop proposed: {found.loop} — {found.reason}",
        f"  accept it into a session plan: controlroom loops next {proposed.run_id} "
        f"--accept PLAN_ID   (or plan it alone: {found.command})",
    ]


def after_loop_lines(ctx: Context, run_id: str, recipe_id: str) -> list[str]:
    """For `controlroom show`: the next loop proposed, when the run is a loop run that has
    ended (nothing for any other run; the run is loaded only when its recipe is a loop)."""
    from controlroom.domain.errors import ControlRoomError, RunStateError
    from controlroom.engine.service import RunService

    try:  # a broken recipe file in the workspace must not make `show` fail
        if recipe_id not in ctx.catalog or ctx.catalog.get(recipe_id).loop is None:
            return []
    except ControlRoomError:
        return []
    try:
        proposed = next_loop(RunService(ctx).load(run_id), ctx.catalog.recipes(), os.environ)
    except (BadInputError, RunStateError):  # no loop after all, or not ended yet
        return []
    return next_loop_lines(proposed)


def _accept(ctx: Context, plan_id: str, proposed: NextLoop) -> str:
    """The proposed loop as a new task of the session plan (routed like the Chief's, after
    the plan's last task); returns what was done."""
    from controlroom.api.limits import check_id
    from controlroom.engine.plans import PlanService

    check_id(plan_id, "PLAN_ID")
    found = proposed.proposal
    if found is None:
        raise BadInputError(f"nothing to accept into plan {plan_id}: {proposed.note}")
    if found.intent is None:
        raise BadInputError(
            f"no task description routes to {found.recipe_id}: run it instead: {found.command}"
        )
    plan = PlanService(ctx).add(plan_id, found.intent)
    task_id = plan.order[-1]
    task = plan.tasks[task_id]
    return (
        f"added to plan {plan_id} as task {task_id}: {task.description!r} "
        f"({task.recipe_id or 'not routed: ' + task.routing_reason})"
    )
