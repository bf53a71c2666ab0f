"""One broken recipe file is reported, refused when run, and never hides the other recipes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlroom.domain.errors import RecipeInvalidError, UnknownRecipeError
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry
from tests.bundled import BUNDLED_RECIPES
from tests.conftest import FIXTURES, write_override

TOOLS = ToolRegistry.default().names()
PROMPTS = PromptRegistry.for_workspace(None).prompt_types()


def override_with_unknown_tool(workspace: Path, recipe_id: str, name: str) -> Path:
    data = json.loads((FIXTURES / "appendix_b_recipe.json").read_text())
    data["recipe_id"] = recipe_id
    data["phase_a"][1]["tool"] = "crystal_ball"
    return write_override(workspace, name, json.dumps(data))


def test_a_broken_override_is_refused_when_run_while_every_other_recipe_loads(
    workspace: Path,
) -> None:
    path = override_with_unknown_tool(workspace, "creative_draft_scene", "mine.json")
    catalog = RecipeCatalog.load(workspace, TOOLS, PROMPTS)
    assert [str(p) for p in catalog.problems] == [
        f"{path}: $.phase_a[1].tool: unknown tool 'crystal_ball'"
    ]
    assert catalog.get("analytical_prose").recipe_id == "analytical_prose"
    assert "creative_draft_scene" in catalog
    for lookup in (catalog.get, catalog.entry):
        with pytest.raises(RecipeInvalidError, match="crystal_ball"):
            lookup("creative_draft_scene")
    assert len(catalog.recipes()) == BUNDLED_RECIPES  # the bundled recipe stays listed


def test_a_broken_new_recipe_is_known_by_its_id_so_running_it_names_the_problem(
    workspace: Path,
) -> None:
    override_with_unknown_tool(workspace, "my_recipe", "mine.json")
    catalog = RecipeCatalog.load(workspace, TOOLS, PROMPTS)
    assert "my_recipe" in catalog and "my_recipe" not in [r.recipe_id for r in catalog.recipes()]
    with pytest.raises(RecipeInvalidError, match="crystal_ball"):
        catalog.get("my_recipe")


def test_a_file_too_broken_to_name_its_recipe_blocks_running_but_not_reading(
    workspace: Path,
) -> None:
    path = write_override(workspace, "broken.json", '{"recipe_id": "x", ')
    catalog = RecipeCatalog.load(workspace, TOOLS, PROMPTS)
    with pytest.raises(RecipeInvalidError, match="not valid JSON") as caught:
        catalog.get("structural_canon")  # the broken file may be its override
    assert str(path) in str(caught.value)
    assert catalog.entry("structural_canon").bundled
    assert len(catalog.entries()) == BUNDLED_RECIPES
    with pytest.raises(UnknownRecipeError):
        catalog.entry("nope")


def test_the_same_recipe_id_twice_in_one_folder_is_refused_naming_both_files(
    workspace: Path,
) -> None:
    data = json.loads((FIXTURES / "appendix_b_recipe.json").read_text())
    data["recipe_id"] = "twice"
    first = write_override(workspace, "a.json", json.dumps(data))
    second = write_override(workspace, "b.json", json.dumps(data))
    catalog = RecipeCatalog.load(workspace, TOOLS, PROMPTS)
    with pytest.raises(RecipeInvalidError) as caught:
        catalog.get("twice")
    assert f"{second}: $.recipe_id: recipe_id 'twice' is also defined in {first}" in str(
        caught.value
    )


def test_strict_loading_reports_every_problem_of_every_file_at_once(workspace: Path) -> None:
    broken = write_override(workspace, "broken.json", "{ not json")
    bad_tool = override_with_unknown_tool(workspace, "other", "other.json")
    with pytest.raises(RecipeInvalidError) as caught:
        RecipeCatalog.load(workspace, TOOLS, PROMPTS, strict=True)
    assert {p.file for p in caught.value.problems} == {str(broken), str(bad_tool)}
