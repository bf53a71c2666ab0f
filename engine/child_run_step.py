"""The `child_run` step's performer: checks what the children need, then waits.

Everything that can be known before a child starts is checked here, so a tree that cannot
run fails at its first level with a clear message: the depth budget (seed 004's 2
DEPTH_EXCEEDED, never absorbed), the recipe, the children's required args, the roles their
recipe needs. The request is recorded with the wait (`ChildRunsRequested`, in the same
commit); the children are started by a tracked policy (`engine/child_policies.py`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from controlroom.domain.child_runs import (
    DEFAULT_MAX_DEPTH,
    MAX_CHILDREN,
    MAX_DEPTH_CAP,
    ChildRunsRequested,
    ChildRunStep,
)
from controlroom.domain.errors import BadInputError, DepthExceededError, MissingArgsError
from controlroom.domain.outcomes import Waiting
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.steps import Ref
from controlroom.engine.ladders import resolve_ladders

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


def depth_budget(run: Run) -> int:
    """The tree's depth budget: given to a child by its parent; a root's from its task arg
    `max_depth`, else its recipe's, else the default."""
    if run.origin.max_depth is not None:
        return run.origin.max_depth
    asked = run.task.args.get("max_depth")
    if isinstance(asked, str) and asked.strip().isdigit():
        asked = int(asked)
    if isinstance(asked, int) and not isinstance(asked, bool):
        if not 0 <= asked <= MAX_DEPTH_CAP:
            raise BadInputError(f"task arg max_depth must be 0-{MAX_DEPTH_CAP}, not {asked}")
        return asked
    assert run.recipe is not None
    return run.recipe.max_depth if run.recipe.max_depth is not None else DEFAULT_MAX_DEPTH


async def perform_child_run(execution: Execution, instance: StepInstance) -> Waiting:
    step = instance.step
    assert isinstance(step, ChildRunStep)
    run = execution.run
    budget = depth_budget(run)
    depth = run.origin.depth + 1
    if depth > budget:
        raise DepthExceededError(step.step_id, depth, budget)
    recipe = execution.ctx.catalog.get(step.recipe)  # an unknown recipe: a clear error
    context = run.task_context()
    args: dict[str, JsonValue] = {}
    if step.pass_args:
        args = {k: v for k, v in run.task.args.items() if k != "max_depth"}
    args |= {name: _value(value, context, run.slot_values) for name, value in step.args.items()}
    items: list[Any] = [None]
    if step.for_each is not None:
        found = resolve_ref(step.for_each.ref, context, run.slot_values)
        if not isinstance(found, list):
            raise BadInputError(
                f"step '{step.step_id}': for_each '{step.for_each.ref}' is a "
                f"{type(found).__name__}, not a list"
            )
        if len(found) > MAX_CHILDREN:
            raise BadInputError(
                f"step '{step.step_id}': {len(found)} items, more than the {MAX_CHILDREN} "
                f"child runs one step may start"
            )
        items = found
    children = []
    for index, item in enumerate(items):
        child_args: dict[str, JsonValue] = dict(args)
        if step.for_each is not None:
            child_args[step.item_arg] = item
        missing = recipe.required_args() - set(child_args)
        if missing:
            raise MissingArgsError(recipe.recipe_id, sorted(missing))
        description = step.description or run.task.description or recipe.recipe_id
        if step.for_each is not None:
            description = f"{description} ({step.item_arg} {_short(item)})"
        children.append({"index": index, "args": child_args, "description": description})
    execution.ctx.agents.check(recipe.agent_archetypes())
    ladders = resolve_ladders(execution.ctx.agents, recipe)
    request = {
        "step_id": step.step_id,
        "instance_id": instance.instance_id,
        "recipe_id": recipe.recipe_id,
        "recipe": recipe.snapshot(),
        "children": children,
        "max_at_once": step.max_at_once,
        "layer": step.layer.value,
        "depth": depth,
        "max_depth": budget,
        "root_run_id": run.origin.root_run_id or run.id,
        "ladders": {
            name: ladder.model_dump(mode="json", exclude_none=True)
            for name, ladder in ladders.items()
        },
    }
    count = len(children)
    request["deadline"] = child_deadline(execution, step)
    return Waiting(
        reason=f"{count} run(s) of {recipe.recipe_id} at depth {depth} of {budget}",
        awaiting={"kind": "child_runs", "recipe_id": recipe.recipe_id, "count": count},
        records=((ChildRunsRequested, request),),
    )


def child_deadline(execution: Execution, step: ChildRunStep) -> datetime | None:
    """The children's deadline: the step's limit from now, never past the parent's own."""
    limits = [execution.run.origin.deadline]
    if step.timeout_s is not None:
        limits.append(execution.ctx.clock.now() + timedelta(seconds=step.timeout_s))
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def _value(value: object, context: dict[str, Any], slots: dict[str, Any]) -> JsonValue:
    if isinstance(value, Ref):
        resolved: JsonValue = resolve_ref(value.ref, context, slots)
        return resolved
    return value  # type: ignore[return-value]


def _short(item: object) -> str:
    text = item if isinstance(item, str) else repr(item)
    return text if len(text) <= 40 else text[:37] + "..."
