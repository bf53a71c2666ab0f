"""Load-time validation of recipes: every problem located by file and JSON path."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pydantic import ValidationError

from controlroom.domain import adaptive_flow as _adaptive_flow  # noqa: F401  (registers it)
from controlroom.domain.errors import RecipeInvalidError, RecipeProblem, RefResolutionError
from controlroom.domain.flow import FLOWS, MAX_INSTANCES_CAP
from controlroom.domain.loop_check import loop_problems
from controlroom.domain.recipe import Recipe, check_refs, check_slots
from controlroom.domain.refs import TASK_FIELDS, TASK_ROOT, parse_ref
from controlroom.domain.steps import KnownNames, Phase, StepSpec


def json_path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def parse_recipe(data: Any, file: str) -> Recipe:
    """Structural parse; raises RecipeInvalidError naming each bad JSON path."""
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        problems = [
            RecipeProblem(file, json_path(_clean_loc(err["loc"], data)), err["msg"])
            for err in exc.errors()
        ]
        raise RecipeInvalidError(problems) from None


def _clean_loc(loc: tuple[int | str, ...], data: Any) -> tuple[int | str, ...]:
    """Drop pydantic's union/discriminator labels so the path matches the JSON document."""
    cleaned: list[int | str] = []
    node = data
    for position, part in enumerate(loc):
        is_last = position == len(loc) - 1
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            node = node[part]
        elif isinstance(node, dict) and is_last:
            pass  # a required key the document lacks: name it
        else:
            continue  # a label pydantic adds for a union member, not part of the document
        cleaned.append(part)
    return tuple(cleaned)


def check_recipe(
    recipe: Recipe,
    file: str,
    known_tools: Collection[str],
    known_prompts: Collection[str],
) -> list[RecipeProblem]:
    """Semantic checks the schema cannot express; an empty list means the recipe is sound."""
    problems: list[RecipeProblem] = []

    def problem(path: str, message: str) -> None:
        problems.append(RecipeProblem(file, path, message))

    if not recipe.steps:
        problem("$", "recipe has no steps in phase_a or phase_b")
    limit = recipe.flow_options().get("max_instances_per_step")
    if limit is not None and (
        not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_INSTANCES_CAP
    ):
        problem(
            "$.flow.options.max_instances_per_step",
            f"must be a whole number from 1 to {MAX_INSTANCES_CAP}",
        )
    if recipe.flow_name() not in FLOWS.names():
        problem(
            "$.flow" if isinstance(recipe.flow, str) else "$.flow.policy",
            f"no flow policy named '{recipe.flow_name()}' (known: {', '.join(FLOWS.names())})",
        )

    written: dict[str, str] = {}
    paths: dict[str, str] = {}
    seen_ids: dict[str, str] = {}
    known = KnownNames(frozenset(known_tools), frozenset(known_prompts))
    phases: list[tuple[Phase, Sequence[StepSpec]]] = [
        ("a", recipe.phase_a),
        ("b", recipe.phase_b),
    ]
    in_order = [(letter, step) for letter, steps in phases for step in steps]
    position = 0
    for letter, steps in phases:
        phase = f"phase_{letter}"
        for i, step in enumerate(steps):
            here = f"$.{phase}[{i}]"
            if step.step_id in seen_ids:
                problem(f"{here}.step_id", f"duplicate step id '{step.step_id}'")
            seen_ids[step.step_id] = here
            if step.phases is not None and letter not in step.phases:
                allowed = " or ".join(f"phase_{p}" for p in step.phases)
                problem(f"{here}.kind", f"a '{step.kind}' step belongs in {allowed}")
            for where, message in step.problems(known):
                problem(f"{here}.{where}", message)
            for where, message in step.placement_problems(in_order, position):
                problem(f"{here}.{where}", message)
            position += 1
            for path in step.paths_written():
                if path in paths:
                    problem(
                        f"{here}.path",
                        f"path '{path}' is already written by step '{paths[path]}': a "
                        "recipe writes each path once",
                    )
                paths.setdefault(path, step.step_id)
            for where, ref in step.refs():
                _check_ref(ref, f"{here}.{where}", written, problem)
            for where, slot in step.slot_reads():
                if slot not in written:
                    problem(f"{here}.{where}", f"reads slot '{slot}' before any step writes it")
            slot = step.output_slot
            if slot == TASK_ROOT:
                problem(f"{here}.output_slot", "'task' is reserved for task metadata")
            elif slot in written:
                problem(
                    f"{here}.output_slot", f"slot '{slot}' is already written by {written[slot]}"
                )
            else:
                written[slot] = step.step_id

    for where, message in loop_problems(recipe):
        problem(where, message)
    for i, check in enumerate(recipe.dod):
        here = f"$.dod[{i}]"
        for where, slot in check_slots(check):
            if slot not in written:
                problem(f"{here}.{where}", f"checks slot '{slot}' that no step writes")
        for where, ref in check_refs(check):
            _check_ref(ref, f"{here}.{where}", written, problem)
    return problems


def _check_ref(text: str, where: str, written: dict[str, str], problem: Any) -> None:
    try:
        ref = parse_ref(text)
    except RefResolutionError as exc:
        problem(where, f"bad $ref '{text}': {exc.reason} at '{exc.failed_at}'")
        return
    if ref.is_task:
        first = ref.steps[0].key if ref.steps else None
        if first not in TASK_FIELDS:
            problem(
                where,
                f"bad $ref root '{text}': task.* offers {', '.join(sorted(TASK_FIELDS))}",
            )
    elif ref.root not in written:
        problem(where, f"bad $ref root '{text}': reads slot '{ref.root}' before any step writes it")


def validate_recipe(
    data: Any, file: str, known_tools: Collection[str], known_prompts: Collection[str]
) -> Recipe:
    recipe = parse_recipe(data, file)
    problems = check_recipe(recipe, file, known_tools, known_prompts)
    if problems:
        raise RecipeInvalidError(problems)
    return recipe
