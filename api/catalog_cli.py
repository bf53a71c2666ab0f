"""What the workspace offers: `controlroom route`, `recipes`, `models`, `workspace`.

controlroom route "TASK"                       which recipe a task routes to
controlroom recipes list | show ID | validate [FILE_OR_FOLDER] | schema
controlroom models check | schema              which model serves each role
controlroom workspace check                    scenes, outline, canon
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controlroom.api.cli_common import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_NOT_ROUTABLE,
    emit_json,
    warn_about_recipes,
)
from controlroom.domain.errors import BadInputError, RecipeInvalidError
from controlroom.recipes.catalog import RecipeCatalog


def cmd_route(ns: argparse.Namespace) -> int:
    from controlroom.domain.router import route

    catalog, _, _ = _catalog(ns)
    decision = route(ns.text, catalog.recipes())
    if ns.json:
        emit_json(decision.model_dump(mode="json"))
    elif decision.routable:
        print(f"{decision.recipe_id}  ({decision.reason})")
        if decision.initial_args:
            print(f"initial args: {json.dumps(decision.initial_args)}")
    else:
        print(f"not routable: {decision.reason}")
    return EXIT_DONE if decision.routable else EXIT_NOT_ROUTABLE


def cmd_recipes(ns: argparse.Namespace) -> int:
    from controlroom.recipes.catalog import load_recipe_file, recipe_files, render_schema

    if ns.action == "schema":
        print(render_schema(), end="")
        return EXIT_DONE
    if ns.action == "validate" and ns.target:
        _, tools, prompts = _catalog(ns, warn=False)
        target = Path(ns.target)
        files = recipe_files(target) if target.is_dir() else [target]
        if not files:
            raise BadInputError(f"no recipe files at '{target}'")
        problems = []
        for path in files:
            try:
                load_recipe_file(path, tools.names(), prompts.prompt_types())
            except RecipeInvalidError as exc:
                problems.extend(exc.problems)
        if problems:
            raise RecipeInvalidError(problems)
        print(f"ok: {len(files)} recipe file(s) valid")
        return EXIT_DONE
    catalog, _, _ = _catalog(ns, warn=ns.action != "validate")
    if ns.action == "validate":
        catalog.check()  # every problem in every file, exit 64
        print(f"ok: {len(catalog.recipes())} recipes valid")
    elif ns.action == "list":
        rows = [
            {
                "recipe_id": e.recipe.recipe_id,
                "label": e.recipe.label,
                "steps": e.recipe.total_steps,
                "source": "bundled" if e.bundled else str(e.source),
                "task_patterns": e.recipe.task_patterns,
            }
            for e in catalog.entries()
        ]
        if ns.json:
            emit_json(rows)
        else:
            for r in rows:
                print(f"{r['recipe_id']:<26} {r['steps']} steps  {r['label']}  [{r['source']}]")
    elif ns.action == "show":
        if not ns.target:
            raise BadInputError("recipes show needs a recipe id")
        recipe = catalog.entry(ns.target).recipe
        emit_json(recipe.snapshot())
        _print_ladders(recipe, Path(ns.workspace))
    return EXIT_DONE


def _print_ladders(recipe: Any, workspace: Path) -> None:
    """Each step's escalation ladder as a run would record it (stderr: stdout stays JSON)."""
    from controlroom.engine.ladders import resolve_ladders
    from controlroom.models.agents import AgentDirectory

    ladders = resolve_ladders(AgentDirectory.for_workspace(workspace), recipe)
    if not ladders:
        print("escalation ladders: none (a failing step fails the run)", file=sys.stderr)
        return
    print("escalation ladders (with this workspace's models.json):", file=sys.stderr)
    for step_id, ladder in ladders.items():
        print(f"  {step_id}:", file=sys.stderr)
        for line in ladder.describe():
            print(f"    {line}", file=sys.stderr)


def cmd_models(ns: argparse.Namespace) -> int:
    from controlroom.domain.ladder_spec import Ladder
    from controlroom.engine.ladders import role_ladder
    from controlroom.models.agents import AgentDirectory
    from controlroom.models.config import config_path, render_schema

    if ns.action == "schema":
        print(render_schema(), end="")
        return EXIT_DONE
    catalog, _, _ = _catalog(ns)
    workspace = Path(ns.workspace)
    agents = AgentDirectory.for_workspace(workspace)
    roles = sorted(
        {role for r in catalog.recipes() for role in r.agent_archetypes()}
        | set(agents.config.roles)
    )
    source = config_path(workspace)
    rows = []
    for role in roles:
        profile = agents.check([role])[role]  # raises a clear error for any role it cannot serve
        provider = agents.provider_config(profile.provider)
        ladder = role_ladder(agents.role(role))
        if ladder is not None:
            for model in ladder.models():
                agents.check_model(model)  # a ladder's model that cannot be served: an error
            ladder = ladder.model_copy(update={"base": f"{profile.provider}:{profile.model}"})
        rows.append(
            {
                "role": role,
                "tier": profile.tier,
                "provider": profile.provider,
                "type": provider.type,
                "model": profile.model,
                "params": dict(profile.params),
                "escalation": [f"{c.provider}:{c.model}" for c in profile.escalation],
                "ladder": ladder.model_dump(mode="json", exclude_none=True) if ladder else None,
            }
        )
    if ns.json:
        emit_json(rows)
        return EXIT_DONE
    print(f"models config: {source if source.is_file() else '(none: every role offline)'}")
    for r in rows:
        print(f"  {r['role']:<12} {r['tier']}  {r['provider']} ({r['type']}) / {r['model']}")
        if r["ladder"]:
            for line in Ladder.model_validate(r["ladder"]).describe():
                print(f"      ladder {line}")
    return EXIT_DONE


def cmd_workspace(ns: argparse.Namespace) -> int:
    """`workspace check`: the layout the tools will use; no scenes or chapters is an error."""
    from controlroom.engine.settings import Settings
    from controlroom.tools.layout import detect_layout, no_units_message
    from controlroom.tools.workspace import Workspace

    settings = Settings.from_env()
    workspace = Workspace(Path(ns.workspace), max_file_bytes=settings.max_file_bytes)
    layout = detect_layout(workspace)
    narrator, found = _narrator(workspace, layout) if layout.units else (None, "none")
    if ns.json:
        emit_json({**layout.as_dict(), "narrator": narrator, "narrator_source": found})
    else:
        units = f"{layout.unit}s" if layout.units else "no scenes or chapters found"
        print(f"layout: {layout.source} ({units})")
        for unit in layout.units:
            print(f"  {layout.unit} {unit.number}: {unit.path}  — {unit.title}")
        print(f"outline: {layout.outline or 'none'}")
        print(f"canon cards: {len(layout.canon)}")
        for path in layout.canon:
            print(f"  {path}")
        # Who "I" is outside dialogue, as the consistency check will read it.
        print(f"narrator: {narrator} ({found})" if narrator else f"narrator: none ({found})")
        if layout.other:
            shown = ", ".join(layout.other[:20])
            more = f" and {len(layout.other) - 20} more" if len(layout.other) > 20 else ""
            print(f"other files (not read by the tools): {shown}{more}")
        left_out = layout.left_out()
        if left_out:
            print(f"left out: {left_out}")
        for warning in layout.warnings:
            print(f"warning: {warning}")
    if not layout.units:
        print(f"controlroom: error: {no_units_message(layout)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_DONE


def _narrator(workspace: Any, layout: Any) -> tuple[str | None, str]:
    """The first-person narrator the consistency check will use, and how it was found:
    declared in `workspace.json`, detected from the chapters, or none."""
    from controlroom.tools.builtin.canon_checker import (
        load_cards,
        narrator_of,
        workspace_settings,
    )
    from controlroom.tools.canon import build_cast

    cast = build_cast(load_cards(workspace, list(layout.canon)))
    texts = [workspace.read_text(unit.path) for unit in layout.units]
    return narrator_of(workspace_settings(workspace)[0], cast, texts)


def _catalog(ns: argparse.Namespace, warn: bool = True) -> Any:
    from controlroom.prompts.registry import PromptRegistry
    from controlroom.tools.base import ToolRegistry
    from controlroom.tools.workspace import Workspace

    workspace = Workspace(Path(ns.workspace))
    tools = ToolRegistry.default()
    prompts = PromptRegistry.for_workspace(workspace.root)
    catalog = RecipeCatalog.load(workspace.root, tools.names(), prompts.prompt_types())
    if warn:
        warn_about_recipes(catalog)
    return catalog, tools, prompts
